package memrank

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// FieldViolation is one google.rpc.BadRequest field violation.
type FieldViolation struct {
	Field       string
	Description string
}

// Error is a failed call: the gRPC code and message, the BadRequest field
// violations and the ErrorInfo reason the server attached.
type Error struct {
	Code       codes.Code
	Message    string
	Violations []FieldViolation
	Reason     string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "memrank: %s: %s", e.Code, e.Message)
	for _, v := range e.Violations {
		fmt.Fprintf(&b, " [%s: %s]", v.Field, v.Description)
	}
	return b.String()
}

// GRPCStatus lets status.FromError and status.Code see the original code.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

// Fields lists the violated field paths, e.g. "candidates[1].id".
func (e *Error) Fields() []string {
	out := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		out[i] = v.Field
	}
	return out
}

// HasField reports whether a violation names the field.
func (e *Error) HasField(field string) bool {
	for _, v := range e.Violations {
		if v.Field == field {
			return true
		}
	}
	return false
}

// AsError returns the *Error inside err, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// fromRPC decodes a gRPC error, including its google.rpc.Status details.
func fromRPC(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	out := &Error{Code: st.Code(), Message: st.Message()}
	if out.Code == codes.ResourceExhausted {
		out.Message = explainSize(out.Message)
	}
	for _, d := range st.Details() {
		switch detail := d.(type) {
		case *errdetails.BadRequest:
			for _, v := range detail.GetFieldViolations() {
				out.Violations = append(out.Violations, FieldViolation{Field: v.GetField(), Description: v.GetDescription()})
			}
		case *errdetails.ErrorInfo:
			out.Reason = detail.GetReason()
		}
	}
	return out
}

// tooLarge is gRPC's refusal of a message over a size limit, which names neither setting: grpc-go's own
// ("trying to send message larger than max (70026307 vs. 67108864)", "grpc: received message larger than
// max ...") and the server's ("SERVER: Received message larger than max ...").
var tooLarge = regexp.MustCompile(`(SERVER: |CLIENT: )?(?:grpc: )?(Sent|Received|trying to send|received) ` +
	`message larger than max \((\d+) vs\. (\d+)\)`)

const (
	serverLimit = "the server's server.max_message_bytes (MEMRANK_MAX_MESSAGE_BYTES)"
	clientLimit = "this client's max message size (memrank.WithMaxMessageBytes, default 64 MiB)"
)

// explainSize says which limit a "message larger than max" is and the setting that raises it (other
// messages as they are); gRPC's own words follow in brackets.
func explainSize(msg string) string {
	m := tooLarge.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	server, sent, size, limit := m[1] == "SERVER: ", m[2] == "Sent" || m[2] == "trying to send", m[3], m[4]
	var said string
	switch {
	case server && !sent:
		said = fmt.Sprintf("the request is %s bytes, over %s, %s bytes: send fewer or smaller candidates, or "+
			"raise that setting on the server", size, serverLimit, limit)
	case server:
		said = fmt.Sprintf("the response is %s bytes, over %s, %s bytes: ask for less (fewer candidates, a lower "+
			"explain level), or raise that setting on the server", size, serverLimit, limit)
	case sent:
		said = fmt.Sprintf("the request is %s bytes, over %s, %s bytes: send fewer or smaller candidates, or "+
			"raise it (memrank.WithMaxMessageBytes) and %s with it", size, clientLimit, limit, serverLimit)
	default:
		said = fmt.Sprintf("the response is %s bytes, over %s, %s bytes: raise it (memrank.WithMaxMessageBytes)",
			size, clientLimit, limit)
	}
	if !strings.HasPrefix(msg, "grpc: ") {
		msg = "grpc: " + msg
	}
	return said + " [" + msg + "]"
}
