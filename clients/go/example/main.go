// Command example ranks three memories with the agent-observer profile on a running sidecar (memrank serve).
//
//	go run ./example -addr 127.0.0.1:50051    (or MEMRANK_ADDR=127.0.0.1:50051 go run ./example)
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/memrank/memrank/clients/go/memrank"
)

func main() {
	addr := flag.String("addr", cmp.Or(os.Getenv("MEMRANK_ADDR"), "127.0.0.1:50051"), "memrank sidecar address")
	flag.Parse()
	c, err := memrank.Dial(*addr, memrank.WithTimeout(2*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Rank(context.Background(), &memrank.RankRequest{
		Query:         "which database runs the ledger",
		ReferenceTime: memrank.Timestamp(time.Now()),
		Profile:       "agent-observer",
		Placement:     memrank.PlacementEdges,
		Candidates: []*memrank.Candidate{
			memrank.NewCandidate("m1", "The ledger runs on Postgres 16", memrank.Kind("fact"), memrank.RetrievalScore(0.9)),
			memrank.NewCandidate("m2", "We chose Postgres for the ledger", memrank.Kind("decision"), memrank.RetrievalScore(0.4)),
			memrank.NewCandidate("m3", "User prefers short answers", memrank.Kind("preference"), memrank.RetrievalScore(0.2)),
		},
	})
	if e, ok := memrank.AsError(err); ok {
		log.Fatalf("rank failed: code=%s fields=%v reason=%s", e.Code, e.Fields(), e.Reason)
	} else if err != nil {
		log.Fatal(err)
	}
	for _, m := range resp.GetSelected() {
		fmt.Printf("position %d rank %d %s final_score %.4f\n", m.GetPosition(), m.GetRank(), m.GetId(),
			m.GetBreakdown().GetFinalScore())
	}
	for _, d := range resp.GetDropped() {
		fmt.Printf("dropped %s: %s\n", d.GetId(), d.GetReason())
	}
}
