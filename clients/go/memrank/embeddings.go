package memrank

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// PackEmbeddings sets req.EmbeddingsF32 and req.EmbeddingDim from one float32
// row per candidate, in candidate order: the rows row-major, each value
// little-endian IEEE-754 (math.Float32bits), as RankRequest.embeddings_f32
// documents. The server then reads the whole matrix at once instead of one
// repeated field per candidate. Every row must have the same length (>= 1)
// and there must be exactly one row per candidate (of req.Candidates, or of
// req.Columns when set: its ids); the candidates must leave
// Candidate.Embedding empty (the server refuses both at once).
func PackEmbeddings(req *RankRequest, rows [][]float32) error {
	n := len(req.GetCandidates())
	if req.GetColumns() != nil {
		n = len(req.GetColumns().GetIds())
	}
	if len(rows) != n {
		return fmt.Errorf("memrank: %d embedding rows for %d candidates", len(rows), n)
	}
	if len(rows) == 0 {
		return errors.New("memrank: no candidates, nothing to pack")
	}
	dim := len(rows[0])
	if dim == 0 {
		return errors.New("memrank: embedding rows are empty")
	}
	buf := make([]byte, 0, len(rows)*dim*4)
	for i, row := range rows {
		if len(row) != dim {
			return fmt.Errorf("memrank: embedding row %d has %d values, row 0 has %d", i, len(row), dim)
		}
		for _, v := range row {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
	}
	req.EmbeddingsF32, req.EmbeddingDim = buf, uint32(dim)
	return nil
}
