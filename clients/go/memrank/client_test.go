package memrank_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	memrankv1 "github.com/memrank/memrank/clients/go/gen/memrank/v1"
	"github.com/memrank/memrank/clients/go/memrank"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fake answers Rank with scripted errors first, then an echo of the candidate ids.
type fake struct {
	memrankv1.UnimplementedRankingServiceServer
	failures []error
	calls    atomic.Int32
	deadline atomic.Bool
	delay    time.Duration
}

func (f *fake) Rank(ctx context.Context, req *memrankv1.RankRequest) (*memrankv1.RankResponse, error) {
	n := int(f.calls.Add(1)) - 1
	_, ok := ctx.Deadline()
	f.deadline.Store(ok)
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if n < len(f.failures) {
		return nil, f.failures[n]
	}
	resp := &memrankv1.RankResponse{RequestId: req.GetRequestId()}
	for i, c := range req.GetCandidates() {
		resp.Selected = append(resp.Selected, &memrankv1.RankedMemory{Id: c.GetId(), Rank: uint32(i + 1)})
	}
	return resp, nil
}

// start serves f on a loopback TCP port and dials it.
func start(t *testing.T, f *fake, opts ...memrank.Option) *memrank.Client {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	memrankv1.RegisterRankingServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return dial(t, lis.Addr().String(), opts...)
}

func dial(t *testing.T, addr string, opts ...memrank.Option) *memrank.Client {
	t.Helper()
	c, err := memrank.Dial(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// retryPolicy is the RankingService method config of a client's service config.
func methodConfig(t *testing.T, opts ...memrank.Option) map[string]any {
	t.Helper()
	js, err := memrank.ServiceConfig(opts...)
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		MethodConfig []map[string]any `json:"methodConfig"`
	}
	if err := json.Unmarshal([]byte(js), &sc); err != nil {
		t.Fatal(err)
	}
	for _, m := range sc.MethodConfig {
		for _, n := range m["name"].([]any) {
			if n.(map[string]any)["service"] == "memrank.v1.RankingService" {
				return m
			}
		}
	}
	t.Fatalf("no method config for memrank.v1.RankingService in %s", js)
	return nil
}

func TestServiceConfigIsTheSharedFileAndMatchesTheDefaults(t *testing.T) {
	shared, err := os.ReadFile(filepath.Join("..", "..", "service_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	embedded, _ := memrank.ServiceConfig()
	if embedded != string(shared) {
		t.Fatal("memrank/service_config.json differs from clients/service_config.json: run clients/gen.sh")
	}
	p := methodConfig(t)["retryPolicy"].(map[string]any)
	if p["maxAttempts"] != float64(memrank.DefaultRetries+1) || p["initialBackoff"] != "0.05s" ||
		memrank.DefaultBackoff != 50*time.Millisecond || fmt.Sprint(p["retryableStatusCodes"]) != "[UNAVAILABLE]" {
		t.Fatalf("retry policy %v vs DefaultRetries %d, DefaultBackoff %s", p, memrank.DefaultRetries, memrank.DefaultBackoff)
	}
}

func TestRetriesAndBackoffMapOntoTheServiceConfig(t *testing.T) {
	if m := methodConfig(t, memrank.WithRetries(0)); m["retryPolicy"] != nil {
		t.Fatalf("retries 0 keeps a retry policy: %v", m)
	}
	m := methodConfig(t, memrank.WithRetries(10), memrank.WithBackoff(2*time.Second))
	p := m["retryPolicy"].(map[string]any)
	if p["maxAttempts"] != float64(5) || m["waitForReady"] != true || p["initialBackoff"] != "2s" || p["maxBackoff"] != "2s" {
		t.Fatalf("retries 10, backoff 2 s: %v", m)
	}
	m = methodConfig(t, memrank.WithRetries(2), memrank.WithBackoff(10*time.Millisecond))
	p = m["retryPolicy"].(map[string]any)
	if p["maxAttempts"] != float64(3) || m["waitForReady"] != nil || p["initialBackoff"] != "0.01s" || p["maxBackoff"] != "1s" {
		t.Fatalf("retries 2, backoff 10 ms: %v", m)
	}
}

// Every attempt answers UNAVAILABLE after 300 ms: five attempts would take at least 1.5 s, so a
// call ending before that was cut by its 1 s deadline, with a retry in it (margins wide enough for a
// loaded machine, where the first attempt also pays for the connection).
func TestTheDeadlineBoundsEveryAttempt(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "draining")
	f := &fake{failures: []error{unavailable, unavailable, unavailable, unavailable, unavailable}, delay: 300 * time.Millisecond}
	c := start(t, f, memrank.WithTimeout(time.Second), memrank.WithRetries(4), memrank.WithBackoff(time.Millisecond))
	started := time.Now()
	_, err := c.Rank(context.Background(), &memrank.RankRequest{})
	took := time.Since(started)
	if e, ok := memrank.AsError(err); !ok || (e.Code != codes.DeadlineExceeded && e.Code != codes.Unavailable) {
		t.Fatalf("want DEADLINE_EXCEEDED, got %v", err)
	}
	if took >= 1500*time.Millisecond {
		t.Fatalf("the call outlived its 1 s deadline: %s", took)
	}
	if n := f.calls.Load(); n < 2 || n > 4 {
		t.Fatalf("want 2 to 4 attempts within the deadline, the server saw %d", n)
	}
}

func TestARefusedConnectionEndsWithinTheDeadline(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()                        // nothing listens: every attempt is UNAVAILABLE
	for _, retries := range []int{3, 10} { // 10: waitForReady, so the deadline ends it
		c := dial(t, addr, memrank.WithTimeout(500*time.Millisecond), memrank.WithRetries(retries))
		started := time.Now()
		_, err := c.ListProfiles(context.Background())
		took := time.Since(started)
		if e, ok := memrank.AsError(err); !ok || (e.Code != codes.Unavailable && e.Code != codes.DeadlineExceeded) {
			t.Fatalf("retries %d: want UNAVAILABLE or DEADLINE_EXCEEDED, got %v", retries, err)
		}
		if took > 1500*time.Millisecond {
			t.Fatalf("retries %d: the call outlived its 500 ms deadline: %s", retries, took)
		}
	}
}

// The third attempt gets the answer: gRPC retried the two UNAVAILABLE ones.
func TestRetriesUnavailable(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "warming up")
	f := &fake{failures: []error{unavailable, unavailable}}
	c := start(t, f, memrank.WithBackoff(time.Millisecond))
	resp, err := c.Rank(context.Background(), &memrank.RankRequest{RequestId: "r1",
		Candidates: []*memrank.Candidate{memrank.NewCandidate("a", "x")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetRequestId() != "r1" || f.calls.Load() != 3 {
		t.Fatalf("want success on the third call, got %d calls", f.calls.Load())
	}
}

func TestGivesUpAfterRetries(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "down")
	f := &fake{failures: []error{unavailable, unavailable, unavailable}}
	c := start(t, f, memrank.WithBackoff(time.Millisecond), memrank.WithRetries(1))
	_, err := c.Rank(context.Background(), &memrank.RankRequest{})
	if e, ok := memrank.AsError(err); !ok || e.Code != codes.Unavailable {
		t.Fatalf("want UNAVAILABLE, got %v", err)
	}
	if f.calls.Load() != 2 {
		t.Fatalf("want 2 calls, got %d", f.calls.Load())
	}
}

func TestNoRetryOnInvalidArgument(t *testing.T) {
	st, _ := status.New(codes.InvalidArgument, "bad candidate").WithDetails(
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "candidates[1].id", Description: "duplicate id"}}},
		&errdetails.ErrorInfo{Reason: "INVALID_CANDIDATE", Domain: "memrank"})
	f := &fake{failures: []error{st.Err()}}
	c := start(t, f)
	_, err := c.Rank(context.Background(), &memrank.RankRequest{})
	var e *memrank.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *memrank.Error, got %T %v", err, err)
	}
	if e.Code != codes.InvalidArgument || !e.HasField("candidates[1].id") || e.Reason != "INVALID_CANDIDATE" {
		t.Fatalf("decoded %+v", e)
	}
	if status.Code(err) != codes.InvalidArgument || f.calls.Load() != 1 {
		t.Fatalf("status.Code %s after %d calls", status.Code(err), f.calls.Load())
	}
}

func TestDefaultDeadline(t *testing.T) {
	f := &fake{delay: time.Second}
	c := start(t, f, memrank.WithTimeout(50*time.Millisecond))
	_, err := c.Rank(context.Background(), &memrank.RankRequest{})
	if e, ok := memrank.AsError(err); !ok || e.Code != codes.DeadlineExceeded {
		t.Fatalf("want DEADLINE_EXCEEDED, got %v", err)
	}
	if !f.deadline.Load() {
		t.Fatal("the server saw no deadline")
	}
}

func TestCandidateHelpers(t *testing.T) {
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	c := memrank.NewCandidate("m1", "text", memrank.Kind("fact"), memrank.RetrievalScore(0.5),
		memrank.Importance(0), memrank.EventTime(at), memrank.ValidBetween(time.Time{}, at))
	if c.GetKind() != "fact" || c.GetRetrievalScore() != 0.5 || c.Importance == nil || c.GetImportance() != 0 {
		t.Fatalf("candidate %v", c)
	}
	if !c.GetEventTime().AsTime().Equal(at) || c.GetValidFrom() != nil || !c.GetValidTo().AsTime().Equal(at) {
		t.Fatalf("times %v", c)
	}
}
