package memrank_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memrank/memrank/clients/go/memrank"
)

// TestOneConnectionAtFourTimesTheDefaultConcurrency: 4 × DefaultConcurrency goroutines share one Client
// (one connection) against the live server at MEMRANK_ADDR, retries off so that a refused stream would
// show as UNAVAILABLE instead of hiding behind a retry: every call succeeds (issue #32, item 6).
func TestOneConnectionAtFourTimesTheDefaultConcurrency(t *testing.T) {
	addr := os.Getenv("MEMRANK_ADDR")
	if addr == "" {
		t.Skip("MEMRANK_ADDR is not set")
	}
	// A generous deadline: the machine may be loaded; a lost call is a failure, a slow one is not.
	c := dial(t, addr, memrank.WithRetries(0), memrank.WithTimeout(2*time.Minute))
	const callers, each = 4 * memrank.DefaultConcurrency, 3
	req := concurrencyRequest()
	var (
		mu    sync.Mutex
		codes = map[string]int{}
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range each {
				code := "OK"
				if _, err := c.Rank(context.Background(), req); err != nil {
					code = err.Error()
					if len(code) > 120 {
						code = code[:120]
					}
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if codes["OK"] != callers*each || len(codes) != 1 {
		t.Fatalf("%d callers x %d calls on one connection: want %d OK, got %v", callers, each, callers*each, codes)
	}
}

// concurrencyRequest is 40 candidates of some text: enough work that calls overlap.
func concurrencyRequest() *memrank.RankRequest {
	req := &memrank.RankRequest{Query: "green tea"}
	for i := range 40 {
		req.Candidates = append(req.Candidates, memrank.NewCandidate(fmt.Sprintf("m%d", i),
			strings.Repeat("the user prefers green tea ", 20), memrank.RetrievalScore(0.2+float64(i)/100)))
	}
	return req
}
