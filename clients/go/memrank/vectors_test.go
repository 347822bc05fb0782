package memrank_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/memrank/memrank/clients/go/memrank"
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
	} `json:"expect"`
	ExpectError *struct {
		Code  string `json:"code"`
		Field string `json:"field"`
	} `json:"expect_error"`
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

// TestVectors replays every conformance vector against the live server at MEMRANK_ADDR.
func TestVectors(t *testing.T) {
	addr := os.Getenv("MEMRANK_ADDR")
	if addr == "" {
		t.Skip("MEMRANK_ADDR is not set: no live memrank server to replay the vectors against")
	}
	c, err := memrank.Dial(addr, memrank.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	digests := map[string]map[string]string{}
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) { digests[v.Name] = replay(t, c, v) })
	}
	writeDigests(t, digests)
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

func replay(t *testing.T, c *memrank.Client, v vector) map[string]string {
	req := &memrank.RankRequest{}
	if err := protojson.Unmarshal(v.Request, req); err != nil {
		t.Fatalf("request: %v", err)
	}
	out := map[string]string{"request": digest(t, req)}
	resp, err := c.Rank(context.Background(), req)
	if err == nil {
		out["response"] = digest(t, resp)
	}
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
	return out
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
