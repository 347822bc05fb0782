package memrank

import (
	"math"
	"regexp"

	"google.golang.org/protobuf/types/known/timestamppb"
)

// CandidatesOf returns a request's candidates as messages, whichever form it sends them in: its Candidates,
// or one Candidate per row of its Columns, each as the server reads that row (an empty column: the field
// unset; a presence column: which rows set an optional field; NaN in a score matrix: no score). The inverse
// of Columnar's columns, for receipts and accounting. A column of the wrong length (which the server refuses)
// reads as unset past its end.
func CandidatesOf(req *RankRequest) []*Candidate {
	c := req.GetColumns()
	if c == nil {
		return req.GetCandidates()
	}
	out := make([]*Candidate, len(c.GetIds()))
	for i, id := range c.GetIds() {
		out[i] = &Candidate{Id: id, Layer: at(c.Layers, i), Kind: at(c.Kinds, i), Content: at(c.Contents, i),
			RetrievalScore: at(c.RetrievalScores, i), AccessCount: at(c.AccessCounts, i),
			TokenCount: at(c.TokenCounts, i), Source: at(c.Sources, i), Provenance: at(c.Provenance, i),
			Safety: at(c.Safety, i), Thread: at(c.Threads, i), Speaker: at(c.Speakers, i),
			Importance: setAt(c.Importance, c.ImportancePresent, i), Position: setAt(c.Positions, c.PositionsPresent, i),
			CreatedAt: timeAt(c.CreatedAt, i), LastAccessedAt: timeAt(c.LastAccessedAt, i),
			EventTime: timeAt(c.EventTime, i), IngestedAt: timeAt(c.IngestedAt, i), ValidFrom: timeAt(c.ValidFrom, i),
			ValidTo: timeAt(c.ValidTo, i), FacetScores: rowAt(c.FacetNames, c.FacetScores, i),
			StageScores: rowAt(c.StageNames, c.StageScores, i), RerankerScore: scoreAt(c.RerankerScores, i)}
		if i < len(c.Metadata) && len(c.Metadata[i].GetEntries()) > 0 {
			out[i].Metadata = c.Metadata[i].GetEntries()
		}
	}
	return out
}

// at is values[i], the zero value past the end (an empty column).
func at[T any](values []T, i int) T {
	if i < len(values) {
		return values[i]
	}
	var zero T
	return zero
}

// setAt is row i of an optional column: nil when the column is empty or its presence column says unset.
func setAt[T any](values []T, present []bool, i int) *T {
	if i >= len(values) || (len(present) > 0 && !at(present, i)) {
		return nil
	}
	v := values[i]
	return &v
}

// scoreAt is row i of a column where NaN means unset: nil past the end or at NaN.
func scoreAt(values []float64, i int) *float64 {
	if i >= len(values) || math.IsNaN(values[i]) {
		return nil
	}
	v := values[i]
	return &v
}

func timeAt(t *TimeColumn, i int) *timestamppb.Timestamp {
	s := setAt(t.GetSeconds(), t.GetPresent(), i)
	if s == nil {
		return nil
	}
	return &timestamppb.Timestamp{Seconds: *s, Nanos: at(t.GetNanos(), i)}
}

// rowAt is row i of a score matrix as a map, without its NaN cells (nil when the row has no score).
func rowAt(names []string, values []float64, i int) map[string]float64 {
	var out map[string]float64
	for j, name := range names {
		if k := i*len(names) + j; k < len(values) && !math.IsNaN(values[k]) {
			if out == nil {
				out = map[string]float64{}
			}
			out[name] = values[k]
		}
	}
	return out
}

// columnPath is a row of a column in a violation: columns.retrieval_scores[3].
var columnPath = regexp.MustCompile(`columns\.(\w+)\[(\d+)\]`)

// fieldOf is the Candidate field of a CandidateColumns column where their names differ.
var fieldOf = map[string]string{"ids": "id", "layers": "layer", "kinds": "kind", "contents": "content",
	"retrieval_scores": "retrieval_score", "access_counts": "access_count", "token_counts": "token_count",
	"sources": "source", "threads": "thread", "positions": "position", "speakers": "speaker",
	"reranker_scores": "reranker_score"}

// inCandidateWords says a path of a request Rank sent as columns in the words of the candidates it was given:
// columns.retrieval_scores[3] is candidates[3].retrieval_score.
func inCandidateWords(text string) string {
	switch text {
	case "columns.ids":
		return "candidates"
	case "columns.facet_names":
		return "candidates.facet_scores"
	case "columns.stage_names":
		return "candidates.stage_scores"
	}
	return columnPath.ReplaceAllStringFunc(text, func(s string) string {
		m := columnPath.FindStringSubmatch(s)
		field, ok := fieldOf[m[1]]
		if !ok {
			field = m[1]
		}
		return "candidates[" + m[2] + "]." + field
	})
}

// renamed is the error with rename applied to its message and each violation's field and description.
func (e *Error) renamed(rename func(string) string) *Error {
	out := &Error{Code: e.Code, Message: rename(e.Message), Reason: e.Reason}
	for _, v := range e.Violations {
		out.Violations = append(out.Violations, FieldViolation{Field: rename(v.Field), Description: rename(v.Description)})
	}
	return out
}
