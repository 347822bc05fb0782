package memrank

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"

	memrankv1 "github.com/memrank/memrank/clients/go/gen/memrank/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The receipt canonical forms VerifyReceipt rebuilds (docs/concepts/receipts.md): ReceiptSchema is the one the
// server writes; ReceiptSchemaV2, one text line per candidate and per drop, is still verified.
const (
	ReceiptSchema   = "memrank.receipt.v3"
	ReceiptSchemaV2 = "memrank.receipt.v2"
)

// Errors a *ReceiptError wraps: the receipt differs from the request and response, or it cannot be rebuilt.
var (
	ErrReceiptMismatch     = errors.New("memrank: receipt does not verify")
	ErrReceiptUnverifiable = errors.New("memrank: receipt cannot be verified")
)

// ReceiptError says what differs (Problems) and what could not be checked (Unchecked).
type ReceiptError struct {
	Problems  []string
	Unchecked []string
}

func (e *ReceiptError) Error() string {
	var b strings.Builder
	b.WriteString(e.Unwrap().Error())
	for _, p := range e.Problems {
		b.WriteString("; differs: " + p)
	}
	for _, u := range e.Unchecked {
		b.WriteString("; not checked: " + u)
	}
	return b.String()
}

// Unwrap gives ErrReceiptMismatch when something differs, else ErrReceiptUnverifiable.
func (e *ReceiptError) Unwrap() error {
	if len(e.Problems) > 0 {
		return ErrReceiptMismatch
	}
	return ErrReceiptUnverifiable
}

const again = "the receipt is the same at every explain level, so the same request asked at EXPLAIN_LEVEL_FULL " +
	"(with the response's reference_time) gives a response that verifies against the same digest"

// rq is q(s): the JSON string literal of s in ASCII (README; encoding/json escapes otherwise).
func rq(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || (r > 0x7f && r <= 0xffff):
			fmt.Fprintf(&b, `\u%04x`, r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// rf is f(x): the 16 hex digits of the big-endian float64 bits of x.
func rf(x float64) string { return fmt.Sprintf("%016x", math.Float64bits(x)) }

// rh is h(b): the SHA-256 hex of b.
func rh(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func ropt(x *float64) string {
	if x == nil {
		return "-"
	}
	return rf(*x)
}

func rtime(t *timestamppb.Timestamp) string {
	if t == nil {
		return "-"
	}
	return rf(float64(t.GetSeconds()) + float64(t.GetNanos())/1e9)
}

func sortedLines(tag string, m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, tag+" "+rq(k)+" "+rf(v))
	}
	sort.Strings(out) // keys are distinct, so this is q(key) order
	return out
}

func embeddingsLine(req *RankRequest) string {
	if len(req.GetEmbeddingsF32()) > 0 {
		return fmt.Sprintf("embeddings %d %s", req.GetEmbeddingDim(), rh(req.GetEmbeddingsF32()))
	}
	dim := 0
	for _, c := range req.GetCandidates() {
		dim = max(dim, len(c.GetEmbedding()))
	}
	if dim == 0 {
		return "embeddings 0 -"
	}
	matrix := make([]byte, 0, 4*dim*len(req.GetCandidates()))
	for _, c := range req.GetCandidates() {
		row := make([]byte, 4*dim) // a candidate without an embedding is a row of zeros
		if e := c.GetEmbedding(); len(e) == dim {
			for i, v := range e {
				binary.LittleEndian.PutUint32(row[4*i:], math.Float32bits(v))
			}
		}
		matrix = append(matrix, row...)
	}
	return fmt.Sprintf("embeddings %d %s", dim, rh(matrix))
}

// candidateLinesV2 is v2's text line of a candidate, then its facet, stage and metadata lines.
func candidateLinesV2(c *Candidate) []string {
	position := "-"
	if c.Position != nil {
		position = strconv.FormatInt(*c.Position, 10)
	}
	fields := []string{"candidate", rq(c.GetId()), rq(c.GetLayer()), rq(c.GetKind()), rh([]byte(c.GetContent())),
		rf(c.GetRetrievalScore()), ropt(c.Importance), strconv.FormatUint(uint64(c.GetAccessCount()), 10),
		strconv.FormatUint(uint64(c.GetTokenCount()), 10), strconv.Itoa(int(c.GetSource())),
		strconv.Itoa(int(c.GetSafety())), rq(c.GetProvenance()), rq(c.GetThread()), position, rq(c.GetSpeaker()),
		rtime(c.GetCreatedAt()), rtime(c.GetLastAccessedAt()), rtime(c.GetEventTime()), rtime(c.GetIngestedAt()),
		rtime(c.GetValidFrom()), rtime(c.GetValidTo())}
	lines := []string{strings.Join(fields, " ")}
	lines = append(lines, sortedLines("facet", c.GetFacetScores())...)
	lines = append(lines, sortedLines("stage", c.GetStageScores())...)
	keys := make([]string, 0, len(c.GetMetadata()))
	for k := range c.GetMetadata() {
		keys = append(keys, "metadata "+rq(k))
	}
	sort.Strings(keys)
	return append(lines, keys...)
}

// colS is S: the strings' UTF-8 byte lengths as 4-byte big-endian integers, then their bytes.
func colS(values []string) []byte {
	out := make([]byte, 0, 4*len(values))
	for _, v := range values {
		out = binary.BigEndian.AppendUint32(out, uint32(len(v)))
	}
	for _, v := range values {
		out = append(out, v...)
	}
	return out
}

// colF is F: each number's big-endian IEEE-754 float64 bits.
func colF(values []float64) []byte {
	out := make([]byte, 0, 8*len(values))
	for _, v := range values {
		out = binary.BigEndian.AppendUint64(out, math.Float64bits(v))
	}
	return out
}

// colO is O: a presence byte per value (1 set, 0 unset), then F with 0.0 for an unset value.
func colO(values []*float64) []byte {
	out := make([]byte, 0, 9*len(values))
	numbers := make([]float64, len(values))
	for i, v := range values {
		if v == nil {
			out = append(out, 0)
		} else {
			out = append(out, 1)
			numbers[i] = *v
		}
	}
	return append(out, colF(numbers)...)
}

// colM is M: per name any map carries, in UTF-8 byte order: S of the name, then O of every map's value for it.
func colM(maps []map[string]float64) []byte {
	seen := map[string]bool{}
	var names []string
	for _, m := range maps {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	sort.Strings(names) // Go compares strings bytewise: UTF-8 byte order
	var out []byte
	for _, name := range names {
		values := make([]*float64, len(maps))
		for i, m := range maps {
			if v, ok := m[name]; ok {
				values[i] = &v
			}
		}
		out = append(append(out, colS([]string{name})...), colO(values)...)
	}
	return out
}

// colK is K: the key counts as 4-byte big-endian integers, then S of every map's keys, each in UTF-8 byte order.
func colK(maps []map[string]string) []byte {
	var out []byte
	var keys []string
	for _, m := range maps {
		out = binary.BigEndian.AppendUint32(out, uint32(len(m)))
		own := make([]string, 0, len(m))
		for k := range m {
			own = append(own, k)
		}
		sort.Strings(own)
		keys = append(keys, own...)
	}
	return append(out, colS(keys)...)
}

func optTime(t *timestamppb.Timestamp) *float64 {
	if t == nil {
		return nil
	}
	v := float64(t.GetSeconds()) + float64(t.GetNanos())/1e9
	return &v
}

// candidateColumns is v3's candidate section: one line per column, the SHA-256 of its bytes.
func candidateColumns(cs []*Candidate) []string {
	n := len(cs)
	str := func(get func(*Candidate) string) []byte {
		values := make([]string, n)
		for i, c := range cs {
			values[i] = get(c)
		}
		return colS(values)
	}
	num := func(get func(*Candidate) float64) []byte {
		values := make([]float64, n)
		for i, c := range cs {
			values[i] = get(c)
		}
		return colF(values)
	}
	opt := func(get func(*Candidate) *float64) []byte {
		values := make([]*float64, n)
		for i, c := range cs {
			values[i] = get(c)
		}
		return colO(values)
	}
	facets, stages, metadata := make([]map[string]float64, n), make([]map[string]float64, n), make([]map[string]string, n)
	for i, c := range cs {
		facets[i], stages[i], metadata[i] = c.GetFacetScores(), c.GetStageScores(), c.GetMetadata()
	}
	type column struct {
		name string
		data []byte
	}
	columns := []column{
		{"id", str((*Candidate).GetId)}, {"layer", str((*Candidate).GetLayer)}, {"kind", str((*Candidate).GetKind)},
		{"content", str((*Candidate).GetContent)}, {"retrieval_score", num((*Candidate).GetRetrievalScore)},
		{"importance", opt(func(c *Candidate) *float64 { return c.Importance })},
		{"access_count", num(func(c *Candidate) float64 { return float64(c.GetAccessCount()) })},
		{"token_count", num(func(c *Candidate) float64 { return float64(c.GetTokenCount()) })},
		{"source", num(func(c *Candidate) float64 { return float64(c.GetSource()) })},
		{"safety", num(func(c *Candidate) float64 { return float64(c.GetSafety()) })},
		{"provenance", str((*Candidate).GetProvenance)}, {"thread", str((*Candidate).GetThread)},
		{"position", opt(func(c *Candidate) *float64 {
			if c.Position == nil {
				return nil
			}
			v := float64(*c.Position)
			return &v
		})},
		{"speaker", str((*Candidate).GetSpeaker)},
		{"created_at", opt(func(c *Candidate) *float64 { return optTime(c.GetCreatedAt()) })},
		{"last_accessed_at", opt(func(c *Candidate) *float64 { return optTime(c.GetLastAccessedAt()) })},
		{"event_time", opt(func(c *Candidate) *float64 { return optTime(c.GetEventTime()) })},
		{"ingested_at", opt(func(c *Candidate) *float64 { return optTime(c.GetIngestedAt()) })},
		{"valid_from", opt(func(c *Candidate) *float64 { return optTime(c.GetValidFrom()) })},
		{"valid_to", opt(func(c *Candidate) *float64 { return optTime(c.GetValidTo()) })},
		{"facet_scores", colM(facets)}, {"stage_scores", colM(stages)}, {"metadata", colK(metadata)},
	}
	out := make([]string, len(columns))
	for i, col := range columns {
		out[i] = "candidate " + col.name + " " + rh(col.data)
	}
	return out
}

// droppedColumns is v3's dropped section: the count, then one line per column (response order).
func droppedColumns(ds []*DroppedMemory) []string {
	ids, layers, covered := make([]string, len(ds)), make([]string, len(ds)), make([]string, len(ds))
	reasons, scores := make([]float64, len(ds)), make([]float64, len(ds))
	for i, d := range ds {
		ids[i], layers[i], covered[i] = d.GetId(), d.GetLayer(), d.GetBreakdown().GetCoveredBy()
		reasons[i], scores[i] = float64(d.GetReason()), d.GetScore()
	}
	return []string{fmt.Sprintf("dropped %d", len(ds)), "drop id " + rh(colS(ids)), "drop layer " + rh(colS(layers)),
		"drop reason " + rh(colF(reasons)), "drop score " + rh(colF(scores)), "drop covered_by " + rh(colS(covered))}
}

// ReceiptCanonical rebuilds a response's receipt bytes from the request and the response alone, in the form
// its receipt names (memrank.receipt.v3 when it names none); the error wraps ErrReceiptUnverifiable when the
// response lacks a part the receipt binds.
func ReceiptCanonical(req *RankRequest, resp *RankResponse) ([]byte, error) {
	schema := resp.GetReceipt().GetSchema()
	if schema == "" {
		schema = ReceiptSchema
	}
	v2 := schema == ReceiptSchemaV2
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	add("schema %s", schema)
	add("query %s", rh([]byte(req.GetQuery())))
	add("reference_time %d %d", resp.GetReferenceTime().GetSeconds(), resp.GetReferenceTime().GetNanos())
	add("profile %s", rq(resp.GetProfile()))
	add("policy_version %s", rq(resp.GetPolicyVersion()))
	add("weights %d", len(resp.GetWeights()))
	for _, w := range resp.GetWeights() {
		add("weight %s %s %s", rq(w.GetSignal()), rf(w.GetWeight()), rq(w.GetNormalization()))
	}
	lookup := 0
	if req.GetExplicitLookup() {
		lookup = 1
	}
	add("explicit_lookup %d", lookup)
	add("placement %d", int32(req.GetPlacement()))
	add("budget %d %d", req.GetBudget().GetMaxTokens(), req.GetBudget().GetMaxItems())
	add("min_score %s", ropt(req.MinScore))
	add("relevance_threshold %s", ropt(req.RelevanceThreshold))
	add("layers %d", len(req.GetLayers()))
	for _, l := range req.GetLayers() {
		add("layer %s %s %d %d %s", rq(l.GetName()), rf(l.GetShare()), l.GetFloorTokens(), l.GetMaxItems(),
			ropt(l.MinScore))
	}
	lines = append(lines, embeddingsLine(req))
	cands := CandidatesOf(req) // either request form
	add("candidates %d", len(cands))
	if v2 {
		for _, c := range cands {
			lines = append(lines, candidateLinesV2(c)...)
		}
	} else {
		lines = append(lines, candidateColumns(cands)...)
	}
	selected := append([]*RankedMemory(nil), resp.GetSelected()...)
	sort.SliceStable(selected, func(i, j int) bool { return selected[i].GetRank() < selected[j].GetRank() })
	add("selected %d", len(selected))
	for _, m := range selected {
		b := m.GetBreakdown()
		if b == nil {
			return nil, &ReceiptError{Unchecked: []string{fmt.Sprintf("the digest: selected %q carries no breakdown "+
				"(EXPLAIN_LEVEL_NONE), and the receipt binds its combined, final and signal scores; %s", m.GetId(), again)}}
		}
		add("memory %d %s %s %d %s %s %s %s", m.GetRank(), rq(m.GetId()), rq(m.GetLayer()), m.GetPosition(),
			rf(m.GetScore()), rf(b.GetCombinedScore()), rf(b.GetFinalScore()), rf(b.GetBlendTerm()))
		for _, s := range b.GetSignals() {
			add("signal %s %s %s %s %s", rq(s.GetName()), rf(s.GetRaw()), rf(s.GetNormalized()), rf(s.GetWeight()),
				rf(s.GetContribution()))
		}
	}
	for _, d := range resp.GetDropped() {
		if d.GetReason() == memrankv1.DropReason_DROP_REASON_REDUNDANT && d.GetBreakdown() == nil {
			return nil, &ReceiptError{Unchecked: []string{fmt.Sprintf("the digest: dropped %q is REDUNDANT but carries "+
				"no breakdown (below EXPLAIN_LEVEL_FULL), so its covered_by is unknown; %s", d.GetId(), again)}}
		}
	}
	if !v2 {
		lines = append(lines, droppedColumns(resp.GetDropped())...)
		return []byte(strings.Join(lines, "\n") + "\n"), nil
	}
	add("dropped %d", len(resp.GetDropped()))
	for _, d := range resp.GetDropped() {
		add("drop %s %s %d %s %s", rq(d.GetId()), rq(d.GetLayer()), int32(d.GetReason()), rf(d.GetScore()),
			rq(d.GetBreakdown().GetCoveredBy()))
	}
	return []byte(strings.Join(lines, "\n") + "\n"), nil
}

// accounting lists what cannot be an answer to the request: a candidate missing, unknown or twice.
func accounting(req *RankRequest, resp *RankResponse) []string {
	var out []string
	asked := map[string]bool{}
	cands := CandidatesOf(req)
	for _, c := range cands {
		asked[c.GetId()] = true
	}
	told := map[string]int{}
	var order []string
	for _, m := range resp.GetSelected() {
		told[m.GetId()]++
		order = append(order, m.GetId())
	}
	for _, d := range resp.GetDropped() {
		told[d.GetId()]++
		order = append(order, d.GetId())
	}
	for _, c := range cands {
		if told[c.GetId()] == 0 {
			out = append(out, fmt.Sprintf("candidate %q is neither selected nor dropped", c.GetId()))
		}
	}
	for _, id := range order {
		if !asked[id] {
			out = append(out, fmt.Sprintf("%q is in the response but is no candidate of the request", id))
		} else if told[id] > 1 {
			out = append(out, fmt.Sprintf("%q is in the response %d times", id, told[id]))
			told[id] = 1
		}
	}
	return out
}

// VerifyReceipt checks a response's receipt: it rebuilds the canonical bytes from the request and the
// response (docs/concepts/receipts.md, in the form the receipt names: v3 or v2), compares their SHA-256 with
// receipt.digest and, when key is given (the receipt key file's bytes, surrounding whitespace removed), checks
// receipt.signature. It returns
// nil when the receipt verified, else a *ReceiptError wrapping ErrReceiptMismatch or ErrReceiptUnverifiable.
// A nil req checks the signature only: the digest binds the candidates' fields, which only the request holds.
func VerifyReceipt(req *RankRequest, resp *RankResponse, key []byte) error {
	r := resp.GetReceipt()
	e := &ReceiptError{}
	if r.GetSchema() != ReceiptSchema && r.GetSchema() != ReceiptSchemaV2 {
		e.Problems = append(e.Problems, fmt.Sprintf("receipt schema is %q; this verifier knows %q and %q",
			r.GetSchema(), ReceiptSchemaV2, ReceiptSchema))
		return e
	}
	switch {
	case len(key) > 0 && r.GetSignature() == "":
		e.Problems = append(e.Problems, "the receipt is not signed, but a key was given")
	case len(key) > 0:
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(r.GetDigest()))
		if !hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(r.GetSignature())) {
			e.Problems = append(e.Problems, "signature: not the HMAC-SHA256 of the digest under this key")
		}
	}
	if req == nil {
		e.Unchecked = append(e.Unchecked, "the digest: it binds every candidate's fields, which only the request "+
			"holds (give the request)")
		return e
	}
	e.Problems = append(e.Problems, accounting(req, resp)...)
	canonical, err := ReceiptCanonical(req, resp)
	var re *ReceiptError
	if errors.As(err, &re) {
		e.Unchecked = append(e.Unchecked, re.Unchecked...)
		return e
	}
	if digest := rh(canonical); digest != r.GetDigest() {
		e.Problems = append(e.Problems, fmt.Sprintf("digest: recomputed %s, the receipt says %s: the request and "+
			"response are not the pair the receipt was made for", digest, r.GetDigest()))
	}
	if len(e.Problems) > 0 {
		return e
	}
	return nil
}
