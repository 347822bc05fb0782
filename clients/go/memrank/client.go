package memrank

import (
	"context"
	"math/rand/v2"
	"sort"
	"time"

	memrankv1 "github.com/memrank/memrank/clients/go/gen/memrank/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Defaults of a Client.
const (
	DefaultTimeout = 5 * time.Second
	DefaultRetries = 3
	DefaultBackoff = 50 * time.Millisecond
)

type config struct {
	timeout time.Duration
	retries int
	backoff time.Duration
	creds   credentials.TransportCredentials
	dial    []grpc.DialOption
}

// Option configures Dial.
type Option func(*config)

// WithTimeout sets the deadline of a call whose context has none (default 5 s).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithRetries sets how often a call failing with UNAVAILABLE is retried (default 3).
func WithRetries(n int) Option { return func(c *config) { c.retries = n } }

// WithBackoff sets the first retry delay; it doubles per attempt, with jitter (default 50 ms).
func WithBackoff(d time.Duration) Option { return func(c *config) { c.backoff = d } }

// WithTransportCredentials uses TLS or other credentials (default: insecure, for a local sidecar).
func WithTransportCredentials(tc credentials.TransportCredentials) Option {
	return func(c *config) { c.creds = tc }
}

// WithDialOptions passes extra options to grpc.NewClient.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.dial = append(c.dial, opts...) }
}

// Client calls one memrank sidecar. It is safe for concurrent use.
type Client struct {
	conn *grpc.ClientConn
	stub memrankv1.RankingServiceClient
	cfg  config
}

// Dial creates a client of the sidecar at addr ("host:port"). The connection is
// made lazily, on the first call.
func Dial(addr string, opts ...Option) (*Client, error) {
	cfg := config{timeout: DefaultTimeout, retries: DefaultRetries, backoff: DefaultBackoff,
		creds: insecure.NewCredentials()}
	for _, opt := range opts {
		opt(&cfg)
	}
	dial := append([]grpc.DialOption{grpc.WithTransportCredentials(cfg.creds)}, cfg.dial...)
	conn, err := grpc.NewClient(addr, dial...)
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, stub: memrankv1.NewRankingServiceClient(conn), cfg: cfg}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Rank scores, gates, selects and orders the request's candidates.
func (c *Client) Rank(ctx context.Context, req *RankRequest) (*RankResponse, error) {
	return call(ctx, c, func(ctx context.Context) (*RankResponse, error) { return c.stub.Rank(ctx, req) })
}

// ScoreAdmission scores one memory for admission: ADMIT, HOLD or REJECT.
func (c *Client) ScoreAdmission(ctx context.Context, req *ScoreAdmissionRequest) (*ScoreAdmissionResponse, error) {
	return call(ctx, c, func(ctx context.Context) (*ScoreAdmissionResponse, error) {
		return c.stub.ScoreAdmission(ctx, req)
	})
}

// ListProfiles lists the server's profiles and their weights.
func (c *Client) ListProfiles(ctx context.Context) (*ListProfilesResponse, error) {
	return call(ctx, c, func(ctx context.Context) (*ListProfilesResponse, error) {
		return c.stub.ListProfiles(ctx, &memrankv1.ListProfilesRequest{})
	})
}

// RecordFeedback labels the candidates of one logged Rank decision (see FeedbackFor). The server
// writes a memrank.feedback.v1 record to its decision log; FAILED_PRECONDITION when the log is off.
func (c *Client) RecordFeedback(ctx context.Context, req *RecordFeedbackRequest) (*RecordFeedbackResponse, error) {
	return call(ctx, c, func(ctx context.Context) (*RecordFeedbackResponse, error) {
		return c.stub.RecordFeedback(ctx, req)
	})
}

// FeedbackFor builds the feedback on the decision resp answered: its decision id (receipt digest)
// and request id, and one label per candidate id (relevance 0..3), in id order.
func FeedbackFor(resp *RankResponse, relevance map[string]uint32) *RecordFeedbackRequest {
	req := &RecordFeedbackRequest{DecisionId: resp.GetReceipt().GetDigest(), RequestId: resp.GetRequestId()}
	ids := make([]string, 0, len(relevance))
	for id := range relevance {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		req.Labels = append(req.Labels, &memrankv1.FeedbackLabel{CandidateId: id, Relevance: relevance[id]})
	}
	return req
}

// call runs fn under the default deadline, retrying UNAVAILABLE with backoff.
func call[T any](ctx context.Context, c *Client, fn func(context.Context) (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		resp, err := once(ctx, c.cfg.timeout, fn)
		if err == nil || status.Code(err) != codes.Unavailable || attempt >= c.cfg.retries {
			return resp, fromRPC(err)
		}
		delay := c.cfg.backoff << attempt
		delay = delay/2 + rand.N(delay+1)
		select {
		case <-ctx.Done():
			return resp, fromRPC(status.FromContextError(ctx.Err()).Err())
		case <-time.After(delay):
		}
	}
}

func once[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	if _, ok := ctx.Deadline(); !ok && timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return fn(ctx)
}
