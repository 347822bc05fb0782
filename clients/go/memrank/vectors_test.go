package memrank_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memrank/memrank/clients/go/memrank"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// vector is one tests/vectors/*.json conformance case.
type vector struct {
	Name    string          `json:"name"`
	Request json.RawMessage `json:"request"`
	Expect  *struct {
		SelectedIDs []string           `json:"selected_ids"`
		Ranks       map[string]uint32  `json:"ranks"`
		FinalScores map[string]float64 `json:"final_scores"`
		Dropped     map[string]string  `json:"dropped"`
		// The optional expectations (tests/vectors/README.md).
		CoveredBy   map[string]string        `json:"covered_by"`
		Stages      map[string][]stageRecord `json:"stages"`
		Suggestions map[string]float64       `json:"importance_suggestions"`
		Shadow      *struct {
			Profile     string   `json:"profile"`
			K           uint32   `json:"k"`
			OverlapAtK  float64  `json:"overlap_at_k"`
			KendallTau  float64  `json:"kendall_tau"`
			SelectedIDs []string `json:"selected_ids"`
		} `json:"shadow"`
		Receipt *struct {
			Schema string   `json:"schema"`
			Lines  []string `json:"lines"`
		} `json:"receipt"`
	} `json:"expect"`
	ExpectError *struct {
		Code  string `json:"code"`
		Field string `json:"field"`
	} `json:"expect_error"`
}

// stageRecord is one expected RankingStage; a field left out of the vector is not checked.
type stageRecord struct {
	Stage             *string  `json:"stage"`
	Provenance        *string  `json:"provenance"`
	ObjectiveContains string   `json:"objective_contains"`
	InputScore        float64  `json:"input_score"`
	OutputScore       *float64 `json:"output_score"`
	Position          uint32   `json:"position"`
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "tests", "vectors", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vectors found: %v", err)
	}
	sort.Strings(paths)
	out := make([]vector, 0, len(paths))
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var v vector
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, v)
	}
	return out
}

// forms is one client of each form on the live server: columns (the default; sent holds the last request it
// put on the wire) and per candidate.
type forms struct {
	columns, perCandidate *memrank.Client
	sent                  atomic.Pointer[memrank.RankRequest]
}

func dialForms(t *testing.T, addr string) *forms {
	f := &forms{}
	spy := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if r, ok := req.(*memrank.RankRequest); ok {
			f.sent.Store(r)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	var err error
	if f.columns, err = memrank.Dial(addr, memrank.WithTimeout(10*time.Second), memrank.WithDialOptions(spy)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.columns.Close() })
	if f.perCandidate, err = memrank.Dial(addr, memrank.WithTimeout(10*time.Second), memrank.WithPerCandidate()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.perCandidate.Close() })
	return f
}

// TestVectors replays every conformance vector against the live server at MEMRANK_ADDR, in both request forms:
// the columns the client sends by default and the candidates as the vector writes them must get the same
// response bytes (or the same refusal, named in the candidates' words).
func TestVectors(t *testing.T) {
	addr := os.Getenv("MEMRANK_ADDR")
	if addr == "" {
		t.Skip("MEMRANK_ADDR is not set: no live memrank server to replay the vectors against")
	}
	f := dialForms(t, addr)
	digests := map[string]map[string]string{}
	var asGiven []string
	vectors := loadVectors(t)
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			digests[v.Name] = replay(t, f, v)
			if f.sent.Load().GetColumns() == nil {
				asGiven = append(asGiven, v.Name)
			}
		})
	}
	// Every vector but those whose candidates the columns cannot say (a NaN facet score, an embedding of
	// another dimension: the server's refusal names the candidate) goes as columns.
	t.Logf("%d of %d vectors sent as columns; as given: %v", len(vectors)-len(asGiven), len(vectors), asGiven)
	if len(asGiven) > 2 {
		t.Errorf("%d vectors not sent as columns: %v", len(asGiven), asGiven)
	}
	writeDigests(t, digests)
}

// sameAnswer: the response to the columns and to the candidates, byte for byte (or the same *Error).
func sameAnswer(t *testing.T, f *forms, req *memrank.RankRequest, resp *memrank.RankResponse, err error) {
	t.Helper()
	sent := f.sent.Load()
	if want, ok := memrank.Columnar(req); ok && digest(t, sent) != digest(t, want) || ok == (sent == req) {
		t.Errorf("sent %v, want the columnar form (%v)", sent, ok)
	}
	respPC, errPC := f.perCandidate.Rank(context.Background(), req)
	if err != nil || errPC != nil {
		if !reflect.DeepEqual(err, errPC) {
			t.Errorf("refusals differ:\n columns: %v\n per candidate: %v", err, errPC)
		}
		return
	}
	if digest(t, resp) != digest(t, respPC) {
		t.Errorf("responses differ:\n columns: %v\n per candidate: %v", resp, respPC)
	}
}

// writeDigests saves the SHA-256 of each request and response as encoded here,
// so clients/test.sh can check that every client sent and got the same bytes.
func writeDigests(t *testing.T, digests map[string]map[string]string) {
	dir := os.Getenv("MEMRANK_DIGESTS_DIR")
	if dir == "" {
		return
	}
	raw, err := json.MarshalIndent(digests, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "go.json"), raw, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func digest(t *testing.T, m proto.Message) string {
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

func replay(t *testing.T, f *forms, v vector) map[string]string {
	req := &memrank.RankRequest{}
	if err := protojson.Unmarshal(v.Request, req); err != nil {
		t.Fatalf("request: %v", err)
	}
	out := map[string]string{"request": digest(t, req)}
	resp, err := f.columns.Rank(context.Background(), req)
	if err == nil {
		out["response"] = digest(t, resp)
	}
	sameAnswer(t, f, req, resp, err)
	if v.ExpectError != nil {
		e, ok := memrank.AsError(err)
		if !ok {
			t.Fatalf("want a *memrank.Error with %s, got %v", v.ExpectError.Code, err)
		}
		if e.Code.String() != codeName(v.ExpectError.Code) {
			t.Errorf("code: want %s, got %s", v.ExpectError.Code, e.Code)
		}
		if !e.HasField(v.ExpectError.Field) {
			t.Errorf("field: want %q among %q", v.ExpectError.Field, e.Fields())
		}
		return out
	}
	if err != nil {
		t.Fatalf("rank: %v", err)
	}
	want := v.Expect
	var ids []string
	for i, m := range resp.GetSelected() {
		ids = append(ids, m.GetId())
		if m.GetPosition() != uint32(i) {
			t.Errorf("%s: position %d at index %d", m.GetId(), m.GetPosition(), i)
		}
		if m.GetRank() != want.Ranks[m.GetId()] {
			t.Errorf("%s: rank want %d, got %d", m.GetId(), want.Ranks[m.GetId()], m.GetRank())
		}
		got, exp := m.GetBreakdown().GetFinalScore(), want.FinalScores[m.GetId()]
		if math.Abs(got-exp) > 1e-9 {
			t.Errorf("%s: final_score want %.17g, got %.17g", m.GetId(), exp, got)
		}
	}
	if !slices.Equal(ids, want.SelectedIDs) {
		t.Errorf("selected: want %v, got %v", want.SelectedIDs, ids)
	}
	dropped := map[string]string{}
	for _, d := range resp.GetDropped() {
		dropped[d.GetId()] = d.GetReason().String()
	}
	if len(dropped) != len(want.Dropped) {
		t.Errorf("dropped: want %v, got %v", want.Dropped, dropped)
	}
	for id, reason := range want.Dropped {
		if dropped[id] != reason {
			t.Errorf("dropped %s: want %s, got %q", id, reason, dropped[id])
		}
	}
	if n := len(resp.GetSelected()) + len(resp.GetDropped()); n != len(req.GetCandidates()) {
		t.Errorf("accounted for %d of %d candidates", n, len(req.GetCandidates()))
	}
	checkExtras(t, v, resp)
	checkReceipt(t, req, resp)           // the request as the caller holds it
	checkReceipt(t, f.sent.Load(), resp) // as sent: columns
	return out
}

// checkReceipt: memrank.VerifyReceipt rebuilds the receipt from the request and the response and it verifies;
// copies with one score changed (one ulp), one id swapped (or renamed) and one dropped candidate removed fail.
func checkReceipt(t *testing.T, req *memrank.RankRequest, resp *memrank.RankResponse) {
	t.Helper()
	if err := memrank.VerifyReceipt(req, resp, nil); err != nil {
		t.Fatalf("VerifyReceipt: %v", err)
	}
	tampered := map[string]*memrank.RankResponse{}
	bad := proto.Clone(resp).(*memrank.RankResponse)
	if len(bad.Selected) > 0 {
		bad.Selected[0].Score = math.Nextafter(bad.Selected[0].Score, math.Inf(1))
	} else {
		bad.Dropped[0].Score = math.Nextafter(bad.Dropped[0].Score, math.Inf(1))
	}
	tampered["score"] = bad
	bad = proto.Clone(resp).(*memrank.RankResponse)
	switch {
	case len(bad.Selected) > 0 && len(bad.Dropped) > 0:
		bad.Selected[0].Id, bad.Dropped[0].Id = bad.Dropped[0].Id, bad.Selected[0].Id
	case len(bad.Selected) > 0:
		bad.Selected[0].Id += "-x"
	default:
		bad.Dropped[0].Id += "-x"
	}
	tampered["id"] = bad
	if len(resp.GetDropped()) > 0 {
		bad = proto.Clone(resp).(*memrank.RankResponse)
		bad.Dropped = bad.Dropped[1:]
		tampered["dropped"] = bad
	}
	for what, bad := range tampered {
		err := memrank.VerifyReceipt(req, bad, nil)
		if !errors.Is(err, memrank.ErrReceiptMismatch) {
			t.Errorf("tampered %s: want ErrReceiptMismatch, got %v", what, err)
		}
	}
}

func close9(got, want float64) bool { return math.Abs(got-want) <= 1e-9 }

// checkExtras checks the optional expectations: covered_by, stages, importance_suggestions, shadow, receipt.
func checkExtras(t *testing.T, v vector, resp *memrank.RankResponse) {
	want := v.Expect
	for _, d := range resp.GetDropped() {
		if cover, ok := want.CoveredBy[d.GetId()]; ok && d.GetBreakdown().GetCoveredBy() != cover {
			t.Errorf("%s: covered_by want %q, got %q", d.GetId(), cover, d.GetBreakdown().GetCoveredBy())
		}
	}
	if len(want.CoveredBy) > 0 {
		seen := 0
		for _, d := range resp.GetDropped() {
			if _, ok := want.CoveredBy[d.GetId()]; ok {
				seen++
			}
		}
		if seen != len(want.CoveredBy) {
			t.Errorf("covered_by: %d of %d ids dropped", seen, len(want.CoveredBy))
		}
	}
	if want.Stages != nil {
		for _, m := range resp.GetSelected() {
			recs, got := want.Stages[m.GetId()], m.GetStages()
			if len(recs) != len(got) {
				t.Errorf("%s: %d stages, want %d: %v", m.GetId(), len(got), len(recs), got)
				continue
			}
			for i, r := range recs {
				st := got[i]
				ok := (r.Stage == nil || *r.Stage == st.GetStage()) &&
					(r.Provenance == nil || *r.Provenance == st.GetProvenance()) &&
					strings.Contains(st.GetObjective(), r.ObjectiveContains) && r.Position == st.GetPosition() &&
					close9(st.GetInputScore(), r.InputScore) &&
					(r.OutputScore == nil || close9(st.GetOutputScore(), *r.OutputScore))
				if !ok {
					t.Errorf("%s: stage %d want %+v, got %v", m.GetId(), i, r, st)
				}
			}
		}
	}
	if want.Suggestions != nil {
		got := map[string]float64{}
		for _, s := range resp.GetImportanceSuggestions() {
			got[s.GetId()] = s.GetSuggestedImportance()
		}
		if len(got) != len(resp.GetImportanceSuggestions()) || len(got) != len(want.Suggestions) {
			t.Errorf("importance_suggestions: want %v, got %v", want.Suggestions, resp.GetImportanceSuggestions())
		}
		for id, value := range want.Suggestions {
			if g, ok := got[id]; !ok || !close9(g, value) {
				t.Errorf("importance_suggestions %s: want %.17g, got %.17g (%v)", id, value, g, ok)
			}
		}
	}
	if w := want.Shadow; w != nil {
		sh := resp.GetShadow()
		if sh == nil || sh.GetProfile() != w.Profile || sh.GetK() != w.K || !slices.Equal(sh.GetSelectedIds(), w.SelectedIDs) ||
			!close9(sh.GetOverlapAtK(), w.OverlapAtK) || !close9(sh.GetKendallTau(), w.KendallTau) {
			t.Errorf("shadow: want %+v, got %v", *w, sh)
		}
	}
	if w := want.Receipt; w != nil {
		if resp.GetReceipt().GetSchema() != w.Schema {
			t.Errorf("receipt schema: want %q, got %q", w.Schema, resp.GetReceipt().GetSchema())
		}
		if got, exp := resp.GetReceipt().GetDigest(), receiptDigest(t, w.Lines, resp.GetPolicyVersion()); got != exp {
			t.Errorf("receipt digest: want %s (from the vector's canonical lines), got %s", exp, got)
		}
	}
}

// plain matches a string whose JSON literal is itself in quotes: printable ASCII but '"' and backslash.
var plain = regexp.MustCompile(`^[ !#-\[\]-~]*$`)

// receiptDigest is the SHA-256 hex of the vector's canonical receipt lines, ${policy_version} filled
// with the JSON string of the response's policy_version, each line ending in a newline.
func receiptDigest(t *testing.T, lines []string, policyVersion string) string {
	if !plain.MatchString(policyVersion) {
		t.Fatalf("policy_version %q needs JSON escapes", policyVersion)
	}
	var b strings.Builder
	for _, line := range lines {
		b.WriteString(strings.ReplaceAll(line, "${policy_version}", `"`+policyVersion+`"`))
		b.WriteString("\n")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// codeName maps "INVALID_ARGUMENT" to the Go name "InvalidArgument".
func codeName(upper string) string {
	out, up := []rune{}, true
	for _, r := range upper {
		switch {
		case r == '_':
			up = true
		case up:
			out, up = append(out, r), false
		default:
			out = append(out, r+('a'-'A'))
		}
	}
	return string(out)
}

// TestLiveRPCs calls ListProfiles and ScoreAdmission on the live server at MEMRANK_ADDR.
func TestLiveRPCs(t *testing.T) {
	addr := os.Getenv("MEMRANK_ADDR")
	if addr == "" {
		t.Skip("MEMRANK_ADDR is not set")
	}
	c, err := memrank.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	profiles, err := c.ListProfiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	compat := map[string]bool{}
	for _, p := range profiles.GetProfiles() {
		compat[p.GetName()] = p.GetCompatibility()
	}
	if !compat["agent-observer"] || !compat["generative-agents"] {
		t.Errorf("compatibility profiles missing: %v", compat)
	}
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	resp, err := c.ScoreAdmission(ctx, &memrank.ScoreAdmissionRequest{
		ReferenceTime: memrank.Timestamp(at),
		Candidate: memrank.NewCandidate("a1", "The user is allergic to peanuts.", memrank.Kind("fact"),
			memrank.Importance(0.9), memrank.CreatedAt(at.Add(-time.Hour))),
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetDecision() == 0 || resp.GetScore() < 0 || resp.GetScore() > 1 {
		t.Errorf("admission: %v", resp)
	}
	_, err = c.ScoreAdmission(ctx, &memrank.ScoreAdmissionRequest{})
	if e, ok := memrank.AsError(err); !ok || e.Code.String() != "InvalidArgument" {
		t.Errorf("admission without a candidate: want INVALID_ARGUMENT, got %v", err)
	}
}

// TestLiveFeedback logs a decision and labels it on the live server at MEMRANK_ADDR (clients/test.sh turns
// the decision log on; it then finds this feedback, labeler "go", joined to its decision in the log).
func TestLiveFeedback(t *testing.T) {
	addr := os.Getenv("MEMRANK_ADDR")
	if addr == "" {
		t.Skip("MEMRANK_ADDR is not set")
	}
	c, err := memrank.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	resp, err := c.Rank(ctx, &memrank.RankRequest{RequestId: "go-feedback", Query: "where does alex live",
		LogDecision: true, Candidates: []*memrank.Candidate{
			memrank.NewCandidate("m1", "Alex lives in Berlin.", memrank.RetrievalScore(0.9)),
			memrank.NewCandidate("m2", "Alex likes tea.", memrank.RetrievalScore(0.4)),
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.GetDecisionLogged() {
		t.Fatalf("decision not logged (is the server's decision log on?): %v", resp)
	}
	req := memrank.FeedbackFor(resp, map[string]uint32{"m2": 0, "m1": 3})
	req.Labeler = "go"
	fb, err := c.RecordFeedback(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(fb.GetFeedbackId()) != 64 || fb.GetLabelCount() != 2 {
		t.Errorf("feedback: %v", fb)
	}
	if got := req.GetLabels(); got[0].GetCandidateId() != "m1" || got[1].GetCandidateId() != "m2" {
		t.Errorf("labels not in id order: %v", got)
	}
	bad := memrank.FeedbackFor(resp, map[string]uint32{"m1": 9})
	_, err = c.RecordFeedback(ctx, bad)
	if e, ok := memrank.AsError(err); !ok || e.Code.String() != "InvalidArgument" || !e.HasField("labels[0].relevance") {
		t.Errorf("relevance 9: want INVALID_ARGUMENT naming labels[0].relevance, got %v", err)
	}
}
