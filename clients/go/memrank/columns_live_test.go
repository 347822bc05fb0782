package memrank_test

import (
	"context"
	"errors"
	"math"
	"os"
	"testing"
	"time"

	memrankv1 "github.com/memrank/memrank/clients/go/gen/memrank/v1"
	"github.com/memrank/memrank/clients/go/memrank"
	"google.golang.org/protobuf/proto"
)

// mixed is a request whose candidates set every kind of field on some rows only: partial embeddings (zero
// rows when packed), -0.0, nanos, optional fields, maps of different keys.
func mixed() *memrank.RankRequest {
	at := time.Date(2026, 5, 1, 9, 30, 0, 250_000_000, time.UTC)
	embedding := func(e ...float32) memrank.CandidateOption { return func(c *memrank.Candidate) { c.Embedding = e } }
	position := func(p int64) memrank.CandidateOption { return func(c *memrank.Candidate) { c.Position = &p } }
	scores := func(facets, stages map[string]float64) memrank.CandidateOption {
		return func(c *memrank.Candidate) { c.FacetScores, c.StageScores = facets, stages }
	}
	return &memrank.RankRequest{
		Query: "where does alex live now", ReferenceTime: memrank.Timestamp(at), Profile: "default",
		Explain: memrankv1.ExplainLevel_EXPLAIN_LEVEL_FULL, // every breakdown, so the receipt is checkable
		Candidates: []*memrank.Candidate{
			memrank.NewCandidate("m1", "Alex moved to Berlin in March.", memrank.Kind("fact"), memrank.Layer("durable"),
				memrank.RetrievalScore(0.9), memrank.Importance(0.7), memrank.CreatedAt(at.Add(-48*time.Hour)),
				memrank.FromSource(memrank.Source(1)), embedding(0.1, 0.2, 0.3), position(4),
				scores(map[string]float64{"bm25": 3.5}, map[string]float64{"rerank": 0.8})),
			memrank.NewCandidate("m2", "Alex lived in Paris.", memrank.RetrievalScore(math.Copysign(0, -1)),
				memrank.AccessCount(3), memrank.LastAccessedAt(at.Add(-time.Hour)),
				memrank.Metadata(map[string]string{"src": "chat"}), scores(map[string]float64{"dense": 0.4}, nil)),
			memrank.NewCandidate("m3", "Alex likes tea.", memrank.RetrievalScore(0.3), memrank.TokenCount(5),
				memrank.ValidBetween(at.Add(-72*time.Hour), time.Time{}), embedding(0.3, 0.2, 0.1), position(5),
				memrank.Safety(memrank.SafetyStatus(1)), func(c *memrank.Candidate) { c.Thread, c.Speaker = "t1", "alex" }),
		},
	}
}

// TestColumnsLive: a request setting every kind of field on some candidates only gets the same response bytes
// as columns and per candidate; its receipt verifies against either form of the request and not once tampered.
func TestColumnsLive(t *testing.T) {
	addr := os.Getenv("MEMRANK_ADDR")
	if addr == "" {
		t.Skip("MEMRANK_ADDR is not set")
	}
	f := dialForms(t, addr)
	req := mixed()
	resp, err := f.columns.Rank(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	sent := f.sent.Load()
	if sent.GetColumns() == nil || len(sent.GetCandidates()) != 0 || sent.GetEmbeddingDim() != 3 {
		t.Fatalf("not sent as columns with packed embeddings: %v", sent)
	}
	sameAnswer(t, f, req, resp, err)
	checkReceipt(t, req, resp)
	checkReceipt(t, sent, resp)
	// A request tampered after the answer: one candidate's content in the columns.
	bad := proto.Clone(sent).(*memrank.RankRequest)
	bad.Columns.Contents[1] += "!"
	if err := memrank.VerifyReceipt(bad, resp, nil); !errors.Is(err, memrank.ErrReceiptMismatch) {
		t.Errorf("changed content: want ErrReceiptMismatch, got %v", err)
	}
}

// TestColumnsRefusalNamesTheCandidate: a bad value sent as columns is refused naming the candidate's field as
// the caller wrote it; one the columns cannot carry (a NaN facet score) goes as given and is named too.
func TestColumnsRefusalNamesTheCandidate(t *testing.T) {
	addr := os.Getenv("MEMRANK_ADDR")
	if addr == "" {
		t.Skip("MEMRANK_ADDR is not set")
	}
	f := dialForms(t, addr)
	req := mixed()
	req.Candidates[2].RetrievalScore = 1.5
	_, err := f.columns.Rank(context.Background(), req)
	if e, ok := memrank.AsError(err); !ok || !e.HasField("candidates[2].retrieval_score") {
		t.Errorf("want INVALID_ARGUMENT naming candidates[2].retrieval_score, got %v", err)
	}
	if f.sent.Load().GetColumns() == nil {
		t.Error("not sent as columns")
	}
	req = mixed()
	req.Candidates[1].FacetScores["dense"] = math.NaN()
	_, err = f.columns.Rank(context.Background(), req)
	if e, ok := memrank.AsError(err); !ok || !e.HasField(`candidates[1].facet_scores["dense"]`) {
		t.Errorf(`want INVALID_ARGUMENT naming candidates[1].facet_scores["dense"], got %v`, err)
	}
	if f.sent.Load() != req {
		t.Error("a NaN facet score: not sent as given")
	}
}
