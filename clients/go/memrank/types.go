package memrank

import (
	"time"

	memrankv1 "github.com/memrank/memrank/clients/go/gen/memrank/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Aliases of the generated messages, so callers import one package.
type (
	RankRequest            = memrankv1.RankRequest
	RankResponse           = memrankv1.RankResponse
	Candidate              = memrankv1.Candidate
	CandidateColumns       = memrankv1.CandidateColumns
	TimeColumn             = memrankv1.TimeColumn
	MetadataRow            = memrankv1.MetadataRow
	Budget                 = memrankv1.Budget
	LayerPolicy            = memrankv1.LayerPolicy
	RankedMemory           = memrankv1.RankedMemory
	DroppedMemory          = memrankv1.DroppedMemory
	ScoreAdmissionRequest  = memrankv1.ScoreAdmissionRequest
	ScoreAdmissionResponse = memrankv1.ScoreAdmissionResponse
	ListProfilesResponse   = memrankv1.ListProfilesResponse
	RecordFeedbackRequest  = memrankv1.RecordFeedbackRequest
	RecordFeedbackResponse = memrankv1.RecordFeedbackResponse
	FeedbackLabel          = memrankv1.FeedbackLabel
	Placement              = memrankv1.Placement
	DropReason             = memrankv1.DropReason
	SafetyStatus           = memrankv1.SafetyStatus
	Source                 = memrankv1.Source
)

// Timestamp converts a time to a protobuf Timestamp; the zero time gives nil (unset).
func Timestamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// CandidateOption sets one optional field of a Candidate.
type CandidateOption func(*Candidate)

// NewCandidate builds a candidate from its id, its content and options.
func NewCandidate(id, content string, opts ...CandidateOption) *Candidate {
	c := &Candidate{Id: id, Content: content}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// Kind sets the memory kind ("decision", "fact", ...), which drives the kind prior.
func Kind(kind string) CandidateOption { return func(c *Candidate) { c.Kind = kind } }

// Layer sets the budget layer ("session", "durable", "knowledge", ...).
func Layer(layer string) CandidateOption { return func(c *Candidate) { c.Layer = layer } }

// RetrievalScore sets the retriever's score, in [0, 1].
func RetrievalScore(s float64) CandidateOption { return func(c *Candidate) { c.RetrievalScore = s } }

// Importance sets an explicit importance in [0, 1] (unset: derived by rules).
func Importance(v float64) CandidateOption {
	return func(c *Candidate) { c.Importance = proto.Float64(v) }
}

// AccessCount sets how often the memory was retrieved before.
func AccessCount(n uint32) CandidateOption { return func(c *Candidate) { c.AccessCount = n } }

// TokenCount sets the size in tokens (unset: estimated by the server).
func TokenCount(n uint32) CandidateOption { return func(c *Candidate) { c.TokenCount = n } }

// CreatedAt sets when the memory was created.
func CreatedAt(t time.Time) CandidateOption { return func(c *Candidate) { c.CreatedAt = Timestamp(t) } }

// LastAccessedAt sets when the memory was last retrieved.
func LastAccessedAt(t time.Time) CandidateOption {
	return func(c *Candidate) { c.LastAccessedAt = Timestamp(t) }
}

// EventTime sets when the remembered event happened.
func EventTime(t time.Time) CandidateOption { return func(c *Candidate) { c.EventTime = Timestamp(t) } }

// IngestedAt sets when the memory was stored.
func IngestedAt(t time.Time) CandidateOption {
	return func(c *Candidate) { c.IngestedAt = Timestamp(t) }
}

// ValidBetween sets the validity window [from, to); a zero time leaves that end open.
func ValidBetween(from, to time.Time) CandidateOption {
	return func(c *Candidate) { c.ValidFrom, c.ValidTo = Timestamp(from), Timestamp(to) }
}

// Safety sets the moderation state.
func Safety(s SafetyStatus) CandidateOption { return func(c *Candidate) { c.Safety = s } }

// FromSource sets who stated the memory.
func FromSource(s Source) CandidateOption { return func(c *Candidate) { c.Source = s } }

// Metadata sets free-form caller metadata.
func Metadata(m map[string]string) CandidateOption { return func(c *Candidate) { c.Metadata = m } }

// Placement values, re-exported.
const (
	PlacementBestFirst = memrankv1.Placement_PLACEMENT_BEST_FIRST
	PlacementBestLast  = memrankv1.Placement_PLACEMENT_BEST_LAST
	PlacementEdges     = memrankv1.Placement_PLACEMENT_EDGES
)
