package memrank

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestColumnarByHand: three candidates as the columns written out by hand (proto3 zero values are unset,
// so a field no candidate sets has no column, and an optional one set by some has a presence column).
func TestColumnarByHand(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	req := &RankRequest{Query: "q", Profile: "default", Candidates: []*Candidate{
		NewCandidate("a", "alpha", Kind("fact"), RetrievalScore(0.5), Importance(0.25), CreatedAt(at)),
		NewCandidate("b", "beta", RetrievalScore(math.Copysign(0, -1)), Metadata(map[string]string{"k": "v"})),
		NewCandidate("c", "", Kind("decision"), CreatedAt(at.Add(time.Second).Truncate(time.Second)),
			func(c *Candidate) { c.FacetScores = map[string]float64{"bm25": 2, "dense": 0.5} }),
	}}
	for _, c := range req.Candidates {
		c.Embedding = nil
	}
	req.Candidates[0].Embedding = []float32{1, -2}
	req.Candidates[2].Embedding = []float32{0.5, 3}
	before := wire(t, req) // not proto.Clone: its merge drops a proto3 -0.0 (the wire keeps it)
	got, ok := Columnar(req)
	if !ok {
		t.Fatal("Columnar: not converted")
	}
	nan := math.NaN()
	want := &CandidateColumns{
		Ids: []string{"a", "b", "c"}, Kinds: []string{"fact", "", "decision"}, Contents: []string{"alpha", "beta", ""},
		RetrievalScores: []float64{0.5, math.Copysign(0, -1), 0},
		Importance:      []float64{0.25, 0, 0}, ImportancePresent: []bool{true, false, false},
		CreatedAt: &TimeColumn{Seconds: []int64{at.Unix(), 0, at.Unix() + 1}, Nanos: []int32{600, 0, 0},
			Present: []bool{true, false, true}},
		FacetNames: []string{"bm25", "dense"}, FacetScores: []float64{nan, nan, nan, nan, 2, 0.5},
		Metadata: []*MetadataRow{{}, {Entries: map[string]string{"k": "v"}}, {}},
	}
	if !proto.Equal(got.GetColumns(), want) {
		t.Errorf("columns:\n got %v\nwant %v", got.GetColumns(), want)
	}
	if math.Signbit(got.GetColumns().GetRetrievalScores()[1]) != true {
		t.Error("-0.0 lost its sign")
	}
	// Rows of little-endian float32, the missing one zeros: 1.0 is 0x3f800000, -2.0 0xc0000000, 0.5
	// 0x3f000000, 3.0 0x40400000.
	wantPacked := le32(0x3f800000, 0xc0000000, 0, 0, 0x3f000000, 0x40400000)
	if string(got.GetEmbeddingsF32()) != string(wantPacked) || got.GetEmbeddingDim() != 2 {
		t.Errorf("packed: %x (dim %d), want %x", got.GetEmbeddingsF32(), got.GetEmbeddingDim(), wantPacked)
	}
	if len(got.GetCandidates()) != 0 || got.GetQuery() != "q" || got.GetProfile() != "default" {
		t.Errorf("the other fields: %v", got)
	}
	if wire(t, req) != before {
		t.Error("Columnar changed the caller's request")
	}
}

func wire(t *testing.T, m proto.Message) string {
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func le32(words ...uint32) []byte {
	out := make([]byte, 0, 4*len(words))
	for _, w := range words {
		out = binary.LittleEndian.AppendUint32(out, w)
	}
	return out
}

// sample is a value of a Candidate field other than its default (a map: one entry).
func sample(t *testing.T, m protoreflect.Message, fd protoreflect.FieldDescriptor, i int) protoreflect.Value {
	switch {
	case fd.IsMap():
		mp := m.NewField(fd).Map()
		if fd.MapValue().Kind() == protoreflect.StringKind {
			mp.Set(protoreflect.ValueOfString("k").MapKey(), protoreflect.ValueOfString("v"))
		} else {
			mp.Set(protoreflect.ValueOfString("name").MapKey(), protoreflect.ValueOfFloat64(float64(i)+0.5))
		}
		return protoreflect.ValueOfMap(mp)
	case fd.Message() != nil && fd.Message().FullName() == "google.protobuf.Timestamp":
		return protoreflect.ValueOfMessage(timestamppb.New(time.Unix(int64(1e9+i), int64(i)*7)).ProtoReflect())
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("s" + strings.Repeat("x", i))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(0.125 * float64(i+1))
	case protoreflect.Uint32Kind:
		return protoreflect.ValueOfUint32(uint32(i + 1))
	case protoreflect.Int64Kind:
		return protoreflect.ValueOfInt64(int64(i + 1))
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(1)
	}
	t.Fatalf("Candidate.%s: a field of a kind this test cannot fill (%s): give it a sample", fd.Name(), fd.Kind())
	return protoreflect.Value{}
}

// TestColumnsRoundTripEveryField: for every field of Candidate (from its descriptor, so a field added to the
// proto later is covered too), candidates setting it on rows 0 and 2 only go to columns and back
// (CandidatesOf) unchanged; the embedding comes back as the packed rows.
func TestColumnsRoundTripEveryField(t *testing.T) {
	fields := (&Candidate{}).ProtoReflect().Descriptor().Fields()
	for k := 0; k < fields.Len(); k++ {
		fd := fields.Get(k)
		if fd.Name() == "embedding" {
			continue
		}
		cands := make([]*Candidate, 4)
		for i := range cands {
			cands[i] = &Candidate{Id: "c" + string(rune('0'+i))}
			if fd.Name() != "id" && i%2 == 0 {
				m := cands[i].ProtoReflect()
				m.Set(fd, sample(t, m, fd, i))
			}
		}
		req, ok := Columnar(&RankRequest{Candidates: cands})
		if !ok {
			t.Fatalf("%s: not converted", fd.Name())
		}
		back := CandidatesOf(req)
		for i := range cands {
			if !proto.Equal(back[i], cands[i]) {
				t.Errorf("%s row %d: back %v, sent %v (columns %v)", fd.Name(), i, back[i], cands[i], req.GetColumns())
			}
		}
	}
	if got := CandidatesOf(&RankRequest{Candidates: []*Candidate{{Id: "x"}}}); len(got) != 1 || got[0].GetId() != "x" {
		t.Errorf("per-candidate request: %v", got)
	}
}

// TestColumnarLeavesWhatColumnsCannotSay: these go as given, so the server's refusal names the candidate.
func TestColumnarLeavesWhatColumnsCannotSay(t *testing.T) {
	facets := func(m map[string]float64) CandidateOption { return func(c *Candidate) { c.FacetScores = m } }
	embedding := func(e ...float32) CandidateOption { return func(c *Candidate) { c.Embedding = e } }
	cases := map[string]*RankRequest{
		"no candidates":   {Query: "q"},
		"NaN facet score": {Candidates: []*Candidate{NewCandidate("a", "x", facets(map[string]float64{"f": math.NaN()}))}},
		"NaN reranker score": {Candidates: []*Candidate{NewCandidate("a", "x",
			func(c *Candidate) { c.RerankerScore = proto.Float64(math.NaN()) })}},
		"empty facet name": {Candidates: []*Candidate{NewCandidate("a", "x", facets(map[string]float64{"": 1}))}},
		"long stage name": {Candidates: []*Candidate{NewCandidate("a", "x",
			func(c *Candidate) { c.StageScores = map[string]float64{strings.Repeat("n", 129): 1} })}},
		"two dimensions": {Candidates: []*Candidate{NewCandidate("a", "x", embedding(1, 2)),
			NewCandidate("b", "y", embedding(1))}},
		"infinite value": {Candidates: []*Candidate{NewCandidate("a", "x", embedding(1, float32(math.Inf(1))))}},
		"NaN value":      {Candidates: []*Candidate{NewCandidate("a", "x", embedding(float32(math.NaN())))}},
		"packed and own": {EmbeddingsF32: le32(0), EmbeddingDim: 1,
			Candidates: []*Candidate{NewCandidate("a", "x", embedding(1))}},
		"columns already": {Columns: &CandidateColumns{Ids: []string{"a"}}},
	}
	for name, req := range cases {
		if got, ok := Columnar(req); ok || got != req {
			t.Errorf("%s: converted to %v", name, got)
		}
	}
	packed := &RankRequest{EmbeddingsF32: le32(0x3f800000), EmbeddingDim: 1, Candidates: []*Candidate{{Id: "a"}}}
	if got, ok := Columnar(packed); !ok || string(got.GetEmbeddingsF32()) != string(le32(0x3f800000)) ||
		got.GetEmbeddingDim() != 1 {
		t.Errorf("packed by the caller: %v %v", ok, got)
	}
	long := NewCandidate("a", "x", facets(map[string]float64{strings.Repeat("é", 64): 1})) // 128 bytes: allowed
	if _, ok := Columnar(&RankRequest{Candidates: []*Candidate{long}}); !ok {
		t.Error("a 128-byte facet name: not converted")
	}
}

// TestInCandidateWords: a violation of the columns Rank sent, in the words of the candidates it was given.
func TestInCandidateWords(t *testing.T) {
	for in, want := range map[string]string{
		"columns.retrieval_scores[3]":       "candidates[3].retrieval_score",
		"columns.ids[0]":                    "candidates[0].id",
		"columns.reranker_scores[5]":        "candidates[5].reranker_score",
		"columns.created_at[12]":            "candidates[12].created_at",
		`columns.facet_scores[2]["bm25"]`:   `candidates[2].facet_scores["bm25"]`,
		"columns.ids":                       "candidates",
		"columns.facet_names":               "candidates.facet_scores",
		"duplicate of columns.ids[1] and 4": "duplicate of candidates[1].id and 4",
		"embeddings_f32":                    "embeddings_f32",
	} {
		if got := inCandidateWords(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

// BenchmarkColumnar: the client's share of a call, 1,600 candidates with 384-dim embeddings: the columns
// and packed matrix (Columnar), then their wire bytes; beside it the per-candidate bytes.
func BenchmarkColumnar(b *testing.B) {
	req := &RankRequest{Query: "q"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1600 {
		e := make([]float32, 384)
		for j := range e {
			e[j] = float32((i*j)%97) / 97
		}
		c := NewCandidate(strings.Repeat("m", 6)+string(rune('a'+i%26)), strings.Repeat("word ", 40),
			Kind("fact"), Layer("durable"), RetrievalScore(float64(i%100)/100), AccessCount(uint32(i%30)),
			CreatedAt(at.Add(-time.Duration(i)*time.Hour)), FromSource(Source(4)), Safety(SafetyStatus(1)))
		c.Embedding = e
		req.Candidates = append(req.Candidates, c)
	}
	b.Run("columns", func(b *testing.B) {
		for b.Loop() {
			sent, _ := Columnar(req)
			if _, err := proto.Marshal(sent); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("per-candidate", func(b *testing.B) {
		for b.Loop() {
			if _, err := proto.Marshal(req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
