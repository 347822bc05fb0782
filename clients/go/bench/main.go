// Command bench times Rank end to end through the Go client as its users call it, for a harness that
// alternates it with other rankers (bench/). It reads commands from stdin, one a line, and answers each with
// one line on stdout:
//
//	load PATH   read a JSON workload into the client's own types (memrank.Candidate, [][]float32): "ok"
//	rank        build the request from them through the public API, call Rank, check the selection is not
//	            empty: the nanoseconds all of it took
//	quit        exit
//
// A command that fails answers "error: " and why, and the program goes on. The workload file:
//
//	{"query": str, "profile": str, "referenceTime": RFC 3339, "budget": {"maxTokens": int, "maxItems": int},
//	 "candidates": [{"id", "layer", "kind", "content", "retrievalScore", "accessCount", "source": "SOURCE_CHAT",
//	                 "safety": "SAFETY_STATUS_...", "importance"?, "createdAt"?, "lastAccessedAt"?}],
//	 "embeddings": [[float, ...], ...]}
//
// Usage: go run ./bench [-per-candidate] 127.0.0.1:50051 (-per-candidate: memrank.WithPerCandidate, to compare)
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	memrankv1 "github.com/memrank/memrank/clients/go/gen/memrank/v1"
	"github.com/memrank/memrank/clients/go/memrank"
)

// workload is what a Go program ranking its memories holds: the client's candidates and float32 rows.
type workload struct {
	query, profile string
	at             time.Time
	budget         *memrank.Budget
	candidates     []*memrank.Candidate
	embeddings     [][]float32
}

type fileCandidate struct {
	ID             string     `json:"id"`
	Layer          string     `json:"layer"`
	Kind           string     `json:"kind"`
	Content        string     `json:"content"`
	RetrievalScore float64    `json:"retrievalScore"`
	AccessCount    uint32     `json:"accessCount"`
	Source         string     `json:"source"`
	Safety         string     `json:"safety"`
	Importance     *float64   `json:"importance"`
	CreatedAt      *time.Time `json:"createdAt"`
	LastAccessedAt *time.Time `json:"lastAccessedAt"`
}

type file struct {
	Query         string    `json:"query"`
	Profile       string    `json:"profile"`
	ReferenceTime time.Time `json:"referenceTime"`
	Budget        struct {
		MaxTokens uint32 `json:"maxTokens"`
		MaxItems  uint32 `json:"maxItems"`
	} `json:"budget"`
	Candidates []fileCandidate `json:"candidates"`
	Embeddings [][]float32     `json:"embeddings"`
}

// enum is the number of an enum value's name, or an error naming the field and the value.
func enum(values map[string]int32, name, field string) (int32, error) {
	v, ok := values[name]
	if !ok {
		return 0, fmt.Errorf("%s: unknown value %q", field, name)
	}
	return v, nil
}

// load reads a workload file into the client's types, as a program would hold its memories.
func load(path string) (*workload, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f file
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	w := &workload{query: f.Query, profile: f.Profile, at: f.ReferenceTime, embeddings: f.Embeddings,
		budget: &memrank.Budget{MaxTokens: f.Budget.MaxTokens, MaxItems: f.Budget.MaxItems}}
	for i, c := range f.Candidates {
		source, err := enum(memrankv1.Source_value, c.Source, fmt.Sprintf("candidates[%d].source", i))
		if err != nil {
			return nil, err
		}
		safety, err := enum(memrankv1.SafetyStatus_value, c.Safety, fmt.Sprintf("candidates[%d].safety", i))
		if err != nil {
			return nil, err
		}
		opts := []memrank.CandidateOption{memrank.Layer(c.Layer), memrank.Kind(c.Kind),
			memrank.RetrievalScore(c.RetrievalScore), memrank.AccessCount(c.AccessCount),
			memrank.FromSource(memrank.Source(source)), memrank.Safety(memrank.SafetyStatus(safety))}
		if c.Importance != nil {
			opts = append(opts, memrank.Importance(*c.Importance))
		}
		if c.CreatedAt != nil {
			opts = append(opts, memrank.CreatedAt(*c.CreatedAt))
		}
		if c.LastAccessedAt != nil {
			opts = append(opts, memrank.LastAccessedAt(*c.LastAccessedAt))
		}
		w.candidates = append(w.candidates, memrank.NewCandidate(c.ID, c.Content, opts...))
	}
	return w, nil
}

// rank is one call as a user makes it: the request from the held values, the rows packed, Rank (which sends
// the candidates as columns); the nanoseconds it all took.
func rank(ctx context.Context, c *memrank.Client, w *workload) (int64, error) {
	start := time.Now()
	req := &memrank.RankRequest{Query: w.query, Profile: w.profile, ReferenceTime: memrank.Timestamp(w.at),
		Budget: w.budget, Candidates: w.candidates}
	if len(w.embeddings) > 0 {
		if err := memrank.PackEmbeddings(req, w.embeddings); err != nil {
			return 0, err
		}
	}
	resp, err := c.Rank(ctx, req)
	if err != nil {
		return 0, err
	}
	if len(resp.GetSelected()) == 0 {
		return 0, errors.New("empty selection")
	}
	return time.Since(start).Nanoseconds(), nil
}

// serve answers the commands read from in, one line each on out, until quit or the end of in.
func serve(ctx context.Context, c *memrank.Client, in io.Reader, out io.Writer) error {
	lines := bufio.NewScanner(in)
	var w *workload
	for lines.Scan() {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(lines.Text()), " ")
		var reply string
		switch cmd {
		case "quit":
			return nil
		case "load":
			loaded, err := load(arg)
			if reply = "ok"; err != nil {
				reply = "error: " + err.Error()
			} else {
				w = loaded
			}
		case "rank":
			if w == nil {
				reply = "error: no workload loaded (load PATH first)"
				break
			}
			ns, err := rank(ctx, c, w)
			if reply = fmt.Sprint(ns); err != nil {
				reply = "error: " + strings.ReplaceAll(err.Error(), "\n", " ")
			}
		default:
			reply = fmt.Sprintf("error: unknown command %q (load PATH, rank, quit)", cmd)
		}
		if _, err := fmt.Fprintln(out, reply); err != nil {
			return err
		}
	}
	return lines.Err()
}

func main() {
	perCandidate := flag.Bool("per-candidate", false, "send the candidates one message each (WithPerCandidate)")
	flag.Parse()
	if flag.NArg() != 1 {
		log.Fatal("usage: bench [-per-candidate] HOST:PORT (commands on stdin: load PATH, rank, quit)")
	}
	opts := []memrank.Option{memrank.WithTimeout(60 * time.Second)}
	if *perCandidate {
		opts = append(opts, memrank.WithPerCandidate())
	}
	c, err := memrank.Dial(flag.Arg(0), opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Stdout unbuffered: each answer is written at once, as the harness waits for it.
	if err := serve(context.Background(), c, os.Stdin, os.Stdout); err != nil {
		log.Fatal(err)
	}
}
