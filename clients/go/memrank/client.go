package memrank

import (
	"context"
	_ "embed" // service_config.json
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	memrankv1 "github.com/memrank/memrank/clients/go/gen/memrank/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Defaults of a Client. DefaultRetries and DefaultBackoff are the retry policy of the shipped service
// config (service_config.json, a copy of clients/service_config.json; a test checks that they agree).
const (
	DefaultTimeout = 5 * time.Second
	DefaultRetries = 3
	DefaultBackoff = 50 * time.Millisecond
	// DefaultConcurrency is how many calls one Client (one connection) carries at once: the server's
	// default stream limit per connection (server.max_streams_per_connection, 32). grpc-go honours the
	// limit the server announces: further calls wait in the client for a free stream, none is refused.
	DefaultConcurrency = 32
	// MaxAttempts is gRPC's cap on retryPolicy.maxAttempts (gRFC A6): more attempts count as 5.
	MaxAttempts = 5
	// DefaultMaxMessageBytes is the largest request and response a Client sends and accepts (64 MiB, the
	// server's default server.max_message_bytes); see WithMaxMessageBytes.
	DefaultMaxMessageBytes = 64 << 20
)

// serviceConfigJSON is the gRPC service config every memrank client ships: retry UNAVAILABLE only.
//
//go:embed service_config.json
var serviceConfigJSON []byte

type config struct {
	timeout      time.Duration
	retries      int           // -1: the service config's
	backoff      time.Duration // 0: the service config's
	maxMessage   int
	perCandidate bool
	creds        credentials.TransportCredentials
	dial         []grpc.DialOption
}

// Option configures Dial.
type Option func(*config)

// WithTimeout sets the deadline of a call whose context has none (default 5 s); it bounds all the
// call's attempts together.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithRetries sets how often a call failing with UNAVAILABLE is retried (default 3, the service
// config's; 0: never). gRPC makes at most 5 attempts, so n above 4 gives 4 retries and also makes
// calls wait for the connection (waitForReady) up to their deadline, to ride out a server that is not
// up yet. See ServiceConfig.
func WithRetries(n int) Option { return func(c *config) { c.retries = max(n, 0) } }

// WithBackoff sets the service config's initialBackoff (default 50 ms): the delay before retry k is
// random in [0, min(d * 2^(k-1), maxBackoff)], maxBackoff raised to d when lower.
func WithBackoff(d time.Duration) Option { return func(c *config) { c.backoff = d } }

// WithMaxMessageBytes sets the largest request this client sends and the largest response it accepts, in
// bytes (default DefaultMaxMessageBytes, 64 MiB, the server's default server.max_message_bytes); it is also
// how much of a call gRPC keeps to replay it on a retry, so any request it sends can be retried. A request
// or response over it fails the call with RESOURCE_EXHAUSTED and a message naming this option (a request over
// the server's limit: naming server.max_message_bytes), not gRPC's bare "message larger than max".
func WithMaxMessageBytes(n int) Option { return func(c *config) { c.maxMessage = n } }

// WithPerCandidate makes Rank send each RankRequest as it is given, its candidates one message each, instead
// of as columns (see Columnar). The server answers both forms alike; the columnar form is cheaper for it to
// read. For comparing the two forms, or a server older than RankRequest.columns.
func WithPerCandidate() Option { return func(c *config) { c.perCandidate = true } }

// WithTransportCredentials uses TLS or other credentials (default: insecure, for a local sidecar).
func WithTransportCredentials(tc credentials.TransportCredentials) Option {
	return func(c *config) { c.creds = tc }
}

// WithDialOptions passes extra options to grpc.NewClient (after the client's own, so they win).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.dial = append(c.dial, opts...) }
}

// ServiceConfig returns the gRPC service config (JSON) of a client dialled with opts: the shipped
// service_config.json with WithRetries and WithBackoff mapped onto its retryPolicy (maxAttempts =
// min(retries+1, 5); retries 0 removes the policy; retries above 4 also set waitForReady).
func ServiceConfig(opts ...Option) (string, error) {
	cfg := newConfig(opts)
	return serviceConfig(cfg.retries, cfg.backoff)
}

func newConfig(opts []Option) config {
	cfg := config{timeout: DefaultTimeout, retries: -1, maxMessage: DefaultMaxMessageBytes,
		creds: insecure.NewCredentials()}
	for _, opt := range opts {
		opt(&cfg)
	}
	return cfg
}

func serviceConfig(retries int, backoff time.Duration) (string, error) {
	if retries < 0 && backoff <= 0 {
		return string(serviceConfigJSON), nil
	}
	var sc map[string]any
	if err := json.Unmarshal(serviceConfigJSON, &sc); err != nil {
		return "", fmt.Errorf("memrank: service_config.json: %w", err)
	}
	methods, _ := sc["methodConfig"].([]any)
	for _, m := range methods {
		method, _ := m.(map[string]any)
		policy, ok := method["retryPolicy"].(map[string]any)
		if !ok {
			continue
		}
		if retries == 0 {
			delete(method, "retryPolicy")
			continue
		}
		if retries > 0 {
			policy["maxAttempts"] = min(retries+1, MaxAttempts)
			if retries+1 > MaxAttempts {
				method["waitForReady"] = true
			}
		}
		if backoff > 0 {
			policy["initialBackoff"] = duration(backoff)
			if most, err := time.ParseDuration(fmt.Sprint(policy["maxBackoff"])); err != nil || most < backoff {
				policy["maxBackoff"] = duration(backoff)
			}
		}
	}
	out, err := json.Marshal(sc)
	return string(out), err
}

// duration is d as a protobuf JSON Duration ("0.05s").
func duration(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
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
	cfg := newConfig(opts)
	sc, err := serviceConfig(cfg.retries, cfg.backoff)
	if err != nil {
		return nil, err
	}
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(cfg.creds),
		grpc.WithDefaultServiceConfig(sc),
		grpc.WithDisableServiceConfig(), // this config, never one from the resolver (DNS)
		// gRPC's own defaults (4 MiB received, 256 KiB kept for a retry) would refuse a large response and
		// leave a large request unretried.
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(cfg.maxMessage), grpc.MaxCallRecvMsgSize(cfg.maxMessage),
			grpc.MaxRetryRPCBufferSize(cfg.maxMessage)),
	}, cfg.dial...)
	conn, err := grpc.NewClient(addr, dial...)
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, stub: memrankv1.NewRankingServiceClient(conn), cfg: cfg}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Rank scores, gates, selects and orders the request's candidates. It sends them as columns (Columnar: one
// repeated field per Candidate field, the embeddings packed), which the server reads faster and answers with
// the same bytes; req is not changed. A refusal then names the candidates' fields as req has them
// (candidates[3].retrieval_score, not columns.retrieval_scores[3]). WithPerCandidate sends req as it is.
func (c *Client) Rank(ctx context.Context, req *RankRequest) (*RankResponse, error) {
	sent, columnar := req, false
	if !c.cfg.perCandidate {
		sent, columnar = Columnar(req)
	}
	resp, err := call(ctx, c, func(ctx context.Context) (*RankResponse, error) { return c.stub.Rank(ctx, sent) })
	if e, ok := AsError(err); ok && columnar {
		return resp, e.renamed(inCandidateWords)
	}
	return resp, err
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

// call runs fn under the default deadline when ctx has none; gRPC retries UNAVAILABLE within it as
// the service config says.
func call[T any](ctx context.Context, c *Client, fn func(context.Context) (T, error)) (T, error) {
	if _, ok := ctx.Deadline(); !ok && c.cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.timeout)
		defer cancel()
	}
	resp, err := fn(ctx)
	return resp, fromRPC(err)
}
