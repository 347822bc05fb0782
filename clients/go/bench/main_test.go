package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	memrankv1 "github.com/memrank/memrank/clients/go/gen/memrank/v1"
	"github.com/memrank/memrank/clients/go/memrank"
	"google.golang.org/protobuf/proto"
)

const small = `{"query": "which database runs billing", "profile": "default",
 "referenceTime": "2026-01-01T00:00:00Z", "budget": {"maxTokens": 4000, "maxItems": 2},
 "candidates": [
  {"id": "m1", "layer": "durable", "kind": "decision", "content": "We chose Postgres for billing.",
   "retrievalScore": 0.9, "accessCount": 3, "source": "SOURCE_CHAT", "safety": "SAFETY_STATUS_SAFE",
   "importance": 0.8, "createdAt": "2025-12-01T10:00:00.5Z"},
  {"id": "m2", "layer": "session", "kind": "", "content": "The user likes tea.", "retrievalScore": 0.2,
   "accessCount": 0, "source": "SOURCE_IMPORTED", "safety": "SAFETY_STATUS_SAFE",
   "lastAccessedAt": "2025-12-31T23:00:00Z"}],
 "embeddings": [[1, 0], [0, 1]]}`

func write(t *testing.T, text string) string {
	path := filepath.Join(t.TempDir(), "w.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoad: the file's candidates as the Candidates a user builds with NewCandidate, written out by hand.
func TestLoad(t *testing.T) {
	w, err := load(write(t, small))
	if err != nil {
		t.Fatal(err)
	}
	want := []*memrank.Candidate{
		{Id: "m1", Layer: "durable", Kind: "decision", Content: "We chose Postgres for billing.", RetrievalScore: 0.9,
			AccessCount: 3, Source: memrankv1.Source_SOURCE_CHAT, Safety: memrankv1.SafetyStatus_SAFETY_STATUS_SAFE,
			Importance: proto.Float64(0.8), CreatedAt: memrank.Timestamp(time.Unix(1764583200, 5e8))},
		{Id: "m2", Layer: "session", Content: "The user likes tea.", RetrievalScore: 0.2,
			Source: memrankv1.Source_SOURCE_IMPORTED, Safety: memrankv1.SafetyStatus_SAFETY_STATUS_SAFE,
			LastAccessedAt: memrank.Timestamp(time.Unix(1767222000, 0))},
	}
	for i := range want {
		if !proto.Equal(w.candidates[i], want[i]) {
			t.Errorf("candidate %d: got %v, want %v", i, w.candidates[i], want[i])
		}
	}
	if len(w.candidates) != 2 || len(w.embeddings) != 2 || w.budget.GetMaxItems() != 2 || w.at.Unix() != 1767225600 {
		t.Errorf("workload: %+v", w)
	}
	_, err = load(write(t, strings.Replace(small, "SOURCE_IMPORTED", "SOURCE_IMPORTEDS", 1)))
	if err == nil || !strings.Contains(err.Error(), `candidates[1].source: unknown value "SOURCE_IMPORTEDS"`) {
		t.Errorf("an unknown source: %v", err)
	}
}

// TestProtocol: the line protocol against the live server at MEMRANK_ADDR, one answer line per command.
func TestProtocol(t *testing.T) {
	addr := os.Getenv("MEMRANK_ADDR")
	if addr == "" {
		t.Skip("MEMRANK_ADDR is not set")
	}
	c, err := memrank.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	in := strings.Join([]string{"rank", "load " + write(t, small), "rank", "rank", "frob", "quit", "rank"}, "\n")
	var out strings.Builder
	if err := serve(context.Background(), c, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "error: no workload") || lines[1] != "ok" ||
		!strings.HasPrefix(lines[4], `error: unknown command "frob"`) {
		t.Fatalf("answers: %q", lines)
	}
	for _, line := range lines[2:4] {
		if ns, err := strconv.ParseInt(line, 10, 64); err != nil || ns <= 0 || ns > int64(time.Minute) {
			t.Errorf("rank answered %q, want nanoseconds", line)
		}
	}
}
