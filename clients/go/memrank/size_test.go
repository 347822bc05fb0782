package memrank_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	memrankv1 "github.com/memrank/memrank/clients/go/gen/memrank/v1"
	"github.com/memrank/memrank/clients/go/memrank"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

const full = memrankv1.ExplainLevel_EXPLAIN_LEVEL_FULL

// withContent is a request of n candidates of about size bytes of content each, each its own words (no two
// near copies), explained in full.
func withContent(n, size int) *memrank.RankRequest {
	req := &memrank.RankRequest{Query: "q", Explain: full}
	for i := range n {
		body := fmt.Sprintf("memory %d is about topic %d ", i, i*7919)
		body += strings.Repeat("x", max(size-len(body), 0))
		req.Candidates = append(req.Candidates, memrank.NewCandidate(fmt.Sprint("m", i), body,
			memrank.RetrievalScore(float64(i%100)/100)))
	}
	return req
}

// tooLarge calls Rank and wants RESOURCE_EXHAUSTED whose message starts with want and names every setting
// in names, with gRPC's own words kept in brackets.
func tooLarge(t *testing.T, c *memrank.Client, req *memrank.RankRequest, want string, names ...string) {
	t.Helper()
	_, err := c.Rank(context.Background(), req)
	e, ok := memrank.AsError(err)
	if !ok || e.Code != codes.ResourceExhausted {
		t.Fatalf("want RESOURCE_EXHAUSTED, got %v", err)
	}
	if !strings.HasPrefix(e.Message, want) || !strings.Contains(e.Message, "[grpc: ") {
		t.Errorf("message %q\n does not start with %q", e.Message, want)
	}
	for _, name := range names {
		if !strings.Contains(e.Message, name) {
			t.Errorf("message %q does not name %s", e.Message, name)
		}
	}
}

// TestMessageSizeErrors: a request or response over a size limit fails naming the setting to raise (#41), not
// with gRPC's bare "message larger than max"; the sizes are the request's own (proto.Size of the columns
// sent) and the limits set.
func TestMessageSizeErrors(t *testing.T) {
	addr := os.Getenv("MEMRANK_ADDR")
	if addr == "" {
		t.Skip("MEMRANK_ADDR is not set")
	}
	dial := func(limit int) *memrank.Client {
		c, err := memrank.Dial(addr, memrank.WithTimeout(60*time.Second), memrank.WithMaxMessageBytes(limit))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	size := func(req *memrank.RankRequest) int {
		sent, _ := memrank.Columnar(req)
		return proto.Size(sent)
	}
	t.Run("request over the client's limit", func(t *testing.T) {
		req := withContent(4, 300_000)
		tooLarge(t, dial(1<<20), req, fmt.Sprintf("the request is %d bytes, over this client's max message size "+
			"(memrank.WithMaxMessageBytes, default 64 MiB), %d bytes: ", size(req), 1<<20),
			"memrank.WithMaxMessageBytes", "server.max_message_bytes")
	})
	t.Run("response over the client's limit", func(t *testing.T) {
		req := withContent(40, 20) // about 1 KB; the response explains all 40 at EXPLAIN_LEVEL_FULL
		resp, err := dial(memrank.DefaultMaxMessageBytes).Rank(context.Background(), req)
		if err != nil || size(req) >= proto.Size(resp)/2 {
			t.Fatalf("request of %d bytes, response %v", size(req), err)
		}
		limit := proto.Size(resp) / 2
		tooLarge(t, dial(limit), req, "the response is ", fmt.Sprintf("over this client's max message size "+
			"(memrank.WithMaxMessageBytes, default 64 MiB), %d bytes: raise it", limit))
	})
	t.Run("request over the server's limit", func(t *testing.T) {
		// The server's default server.max_message_bytes: 64 MiB (clients/test.sh runs the defaults).
		req := withContent(66, 1<<20)
		tooLarge(t, dial(1<<30), req, fmt.Sprintf("the request is %d bytes, over the server's "+
			"server.max_message_bytes (MEMRANK_MAX_MESSAGE_BYTES), %d bytes: ", size(req), 64<<20))
	})
	t.Run("the default limit is the server's", func(t *testing.T) {
		// gRPC's own default would refuse a response over 4 MiB: 1,600 candidates of long ids explained in full.
		req := withContent(1600, 20)
		for _, c := range req.Candidates {
			c.Id += strings.Repeat("-", 400)
		}
		resp, err := dial(memrank.DefaultMaxMessageBytes).Rank(context.Background(), req)
		if err != nil || proto.Size(resp) <= 4<<20 {
			t.Errorf("a response over 4 MiB: %d bytes, %v", proto.Size(resp), err)
		}
		t.Logf("a response of %d bytes", proto.Size(resp))
	})
}
