package memrank

import (
	"errors"
	"fmt"
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
