package memrank

import "testing"

// TestExplainSize: each form of gRPC's "message larger than max" said as the limit it is; other messages kept.
func TestExplainSize(t *testing.T) {
	for in, want := range map[string]string{
		"SERVER: Sent message larger than max (9 vs. 8)": "the response is 9 bytes, over the server's " +
			"server.max_message_bytes (MEMRANK_MAX_MESSAGE_BYTES), 8 bytes: ask for less (fewer candidates, a " +
			"lower explain level), or raise that setting on the server [grpc: SERVER: Sent message larger than " +
			"max (9 vs. 8)]",
		"grpc: received message larger than max (7 vs. 6)": "the response is 7 bytes, over this client's max " +
			"message size (memrank.WithMaxMessageBytes, default 64 MiB), 6 bytes: raise it " +
			"(memrank.WithMaxMessageBytes) [grpc: received message larger than max (7 vs. 6)]",
		"in-flight bytes over server.max_inflight_bytes": "in-flight bytes over server.max_inflight_bytes",
	} {
		if got := explainSize(in); got != want {
			t.Errorf("%q:\n got %q\nwant %q", in, got, want)
		}
	}
}
