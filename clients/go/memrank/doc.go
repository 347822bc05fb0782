// Package memrank is a small client of the memrank ranking sidecar
// (memrank.v1.RankingService over gRPC).
//
//	c, err := memrank.Dial("127.0.0.1:50051")
//	if err != nil { ... }
//	defer c.Close()
//	resp, err := c.Rank(ctx, &memrank.RankRequest{
//		Query:         "which database runs the ledger?",
//		ReferenceTime: memrank.Timestamp(time.Now()),
//		Profile:       "agent-observer",
//		Candidates:    []*memrank.Candidate{memrank.NewCandidate("m1", "The ledger runs on Postgres 16", memrank.Kind("fact"))},
//	})
//
// Rank sends the candidates as columns (RankRequest.columns, see Columnar), which
// the server reads faster and answers with the same bytes; a refusal still names
// candidates[i]. VerifyReceipt checks a response's receipt against the request
// in either form.
//
// Every call gets a default deadline (WithTimeout) unless the context already
// has one; it bounds all the call's attempts. UNAVAILABLE is retried by gRPC
// itself, as the service config every memrank client ships says
// (service_config.json, embedded; WithRetries and WithBackoff map onto it, see
// ServiceConfig). A failed call returns an *Error carrying the
// gRPC code, the google.rpc.BadRequest field violations and the
// google.rpc.ErrorInfo reason; use errors.As or AsError to get it.
package memrank
