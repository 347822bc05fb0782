package memrank

import (
	"encoding/binary"
	"math"
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// maxNameBytes is the server's limit on a facet or stage name: a longer (or empty) one is refused per
// candidate, so such a request goes as given and the refusal names the candidate.
const maxNameBytes = 128

// candidatesField is RankRequest.candidates, the one field Columnar does not copy.
const candidatesField protoreflect.FieldNumber = 5

// Columnar returns req with its candidates as columns (RankRequest.columns, one repeated field per Candidate
// field) and their embeddings packed (embeddings_f32, zero rows where a candidate has none, as the server
// reads a missing one), and true: the form Rank sends, which the server reads a column at a time. The same
// candidates give the same response in either form. The result is a new message that shares req's other
// fields; req is not changed.
//
// It returns req itself and false when there is nothing to convert (no candidates, or columns already) or
// when the columns cannot say what the candidates do, so the server's refusal names the candidate: a NaN
// facet, stage or reranker score, an empty or overlong (> 128 bytes) facet or stage name, embeddings of several
// dimensions or holding NaN or infinity, Candidate.embedding beside packed embeddings.
func Columnar(req *RankRequest) (*RankRequest, bool) {
	cands := req.GetCandidates()
	if len(cands) == 0 || req.GetColumns() != nil {
		return req, false
	}
	cols, ok := columnsOf(cands)
	if !ok {
		return req, false
	}
	packed, dim, ok := embeddingsOf(req, cands)
	if !ok {
		return req, false
	}
	out := &RankRequest{}
	src, dst := req.ProtoReflect(), out.ProtoReflect()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Number() != candidatesField {
			dst.Set(fd, v) // shared, not copied: the caller's request is only read
		}
		return true
	})
	dst.SetUnknown(src.GetUnknown())
	out.Columns = cols
	if dim > 0 {
		out.EmbeddingsF32, out.EmbeddingDim = packed, uint32(dim)
	}
	return out, true
}

// columnsOf is the candidates as CandidateColumns; false when a facet or stage map cannot be a column.
func columnsOf(cs []*Candidate) (*CandidateColumns, bool) {
	cols := &CandidateColumns{
		Ids:             column(cs, (*Candidate).GetId),
		Layers:          column(cs, (*Candidate).GetLayer),
		Kinds:           column(cs, (*Candidate).GetKind),
		Contents:        column(cs, (*Candidate).GetContent),
		RetrievalScores: floats(cs, (*Candidate).GetRetrievalScore),
		AccessCounts:    column(cs, (*Candidate).GetAccessCount),
		TokenCounts:     column(cs, (*Candidate).GetTokenCount),
		CreatedAt:       times(cs, (*Candidate).GetCreatedAt),
		LastAccessedAt:  times(cs, (*Candidate).GetLastAccessedAt),
		EventTime:       times(cs, (*Candidate).GetEventTime),
		IngestedAt:      times(cs, (*Candidate).GetIngestedAt),
		ValidFrom:       times(cs, (*Candidate).GetValidFrom),
		ValidTo:         times(cs, (*Candidate).GetValidTo),
		Sources:         column(cs, (*Candidate).GetSource),
		Provenance:      column(cs, (*Candidate).GetProvenance),
		Safety:          column(cs, (*Candidate).GetSafety),
		Threads:         column(cs, (*Candidate).GetThread),
		Speakers:        column(cs, (*Candidate).GetSpeaker),
	}
	if len(cols.Ids) == 0 {
		cols.Ids = make([]string, len(cs)) // every id empty: still one per candidate (the server refuses them)
	}
	cols.Importance, cols.ImportancePresent = optional(cs, func(c *Candidate) *float64 { return c.Importance })
	cols.Positions, cols.PositionsPresent = optional(cs, func(c *Candidate) *int64 { return c.Position })
	var okF, okS, okR bool
	cols.RerankerScores, okR = rerankerScores(cs)
	cols.FacetNames, cols.FacetScores, okF = matrix(cs, (*Candidate).GetFacetScores)
	cols.StageNames, cols.StageScores, okS = matrix(cs, (*Candidate).GetStageScores)
	for i, c := range cs {
		if len(c.GetMetadata()) == 0 {
			continue
		}
		if cols.Metadata == nil {
			cols.Metadata = make([]*MetadataRow, len(cs))
			for j := range cols.Metadata {
				cols.Metadata[j] = &MetadataRow{}
			}
		}
		cols.Metadata[i].Entries = c.GetMetadata()
	}
	return cols, okF && okS && okR
}

// rerankerScores is Candidate.reranker_score as a column, NaN where a candidate has none (as the server reads
// it), nil when none has one; false when a candidate sends NaN, which the column would read as "no score":
// such a request goes as given and the server's refusal names the candidate.
func rerankerScores(cs []*Candidate) ([]float64, bool) {
	var out []float64
	for i, c := range cs {
		if c.RerankerScore == nil {
			continue
		}
		if math.IsNaN(*c.RerankerScore) {
			return nil, false
		}
		if out == nil {
			out = make([]float64, len(cs))
			for j := range out {
				out[j] = math.NaN()
			}
		}
		out[i] = *c.RerankerScore
	}
	return out, true
}

// column is get of every candidate, or nil when every value is the zero value (an empty column: the field
// unset for every candidate, which is what the zero value of a proto3 scalar means).
func column[T comparable](cs []*Candidate, get func(*Candidate) T) []T {
	var zero T
	for i, c := range cs {
		if get(c) != zero {
			out := make([]T, len(cs))
			for j := i; j < len(cs); j++ {
				out[j] = get(cs[j])
			}
			return out
		}
	}
	return nil
}

// floats is column for float64, comparing bits: -0.0 is sent per candidate (its bits are not zero) and
// the receipt binds those bits, so it must go in the column too.
func floats(cs []*Candidate, get func(*Candidate) float64) []float64 {
	bits := column(cs, func(c *Candidate) uint64 { return math.Float64bits(get(c)) })
	if bits == nil {
		return nil
	}
	out := make([]float64, len(cs))
	for i, b := range bits {
		out[i] = math.Float64frombits(b)
	}
	return out
}

// optional is an optional field's column and its presence column: values nil when no candidate sets it,
// present nil when every candidate does (an unset row holds the zero value, which the server ignores).
func optional[T any](cs []*Candidate, get func(*Candidate) *T) (values []T, present []bool) {
	set := 0
	for _, c := range cs {
		if get(c) != nil {
			set++
		}
	}
	if set == 0 {
		return nil, nil
	}
	values = make([]T, len(cs))
	if set < len(cs) {
		present = make([]bool, len(cs))
	}
	for i, c := range cs {
		if v := get(c); v != nil {
			values[i] = *v
			if present != nil {
				present[i] = true
			}
		}
	}
	return values, present
}

// times is a Timestamp field as a TimeColumn, nil when no candidate sets it; nanos only when one is not 0.
func times(cs []*Candidate, get func(*Candidate) *timestamppb.Timestamp) *TimeColumn {
	seconds, present := optional(cs, func(c *Candidate) *int64 {
		if t := get(c); t != nil {
			return &t.Seconds
		}
		return nil
	})
	if seconds == nil {
		return nil
	}
	nanos := column(cs, func(c *Candidate) int32 { return get(c).GetNanos() })
	return &TimeColumn{Seconds: seconds, Nanos: nanos, Present: present}
}

// matrix is a map field as the names any candidate sets (sorted) and the dense row-major matrix of their
// values, NaN where a candidate has no value; false for a NaN value or a name the server refuses.
func matrix(cs []*Candidate, get func(*Candidate) map[string]float64) ([]string, []float64, bool) {
	seen := map[string]int{}
	var names []string
	for _, c := range cs {
		for k, v := range get(c) {
			if math.IsNaN(v) || k == "" || len(k) > maxNameBytes {
				return nil, nil, false
			}
			if _, ok := seen[k]; !ok {
				seen[k] = 0
				names = append(names, k)
			}
		}
	}
	if len(names) == 0 {
		return nil, nil, true
	}
	sort.Strings(names)
	for j, k := range names {
		seen[k] = j
	}
	values := make([]float64, len(cs)*len(names))
	for i, c := range cs {
		row := values[i*len(names) : (i+1)*len(names)]
		for j := range row {
			row[j] = math.NaN()
		}
		for k, v := range get(c) {
			row[seen[k]] = v
		}
	}
	return names, values, true
}

// embeddingsOf is the candidates' own embeddings packed (little-endian float32, row-major, zero rows where a
// candidate has none) and their dimension; dimension 0 when none has one or req packs them already; false
// when they cannot go packed as they are.
func embeddingsOf(req *RankRequest, cs []*Candidate) ([]byte, int, bool) {
	dim := 0
	for _, c := range cs {
		if n := len(c.GetEmbedding()); n > 0 && dim > 0 && n != dim {
			return nil, 0, false
		} else if n > 0 {
			dim = n
		}
	}
	if len(req.GetEmbeddingsF32()) > 0 || req.GetEmbeddingDim() > 0 {
		return nil, 0, dim == 0
	}
	if dim == 0 {
		return nil, 0, true
	}
	packed := make([]byte, 0, len(cs)*dim*4)
	zeros := make([]byte, dim*4)
	for _, c := range cs {
		e := c.GetEmbedding()
		if len(e) == 0 {
			packed = append(packed, zeros...)
		}
		for _, v := range e {
			u := math.Float32bits(v)
			if u&0x7f800000 == 0x7f800000 { // NaN or infinity (all exponent bits set): refused per candidate
				return nil, 0, false
			}
			packed = binary.LittleEndian.AppendUint32(packed, u)
		}
	}
	return packed, dim, true
}
