package memrank_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	memrankv1 "github.com/memrank/memrank/clients/go/gen/memrank/v1"
	"github.com/memrank/memrank/clients/go/memrank"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
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

func start(t *testing.T, f *fake, opts ...memrank.Option) *memrank.Client {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	memrankv1.RegisterRankingServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	dialer := func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }
	opts = append([]memrank.Option{memrank.WithDialOptions(grpc.WithContextDialer(dialer))}, opts...)
	c, err := memrank.Dial("passthrough:///bufnet", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

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
