// Command goobserver is the Go reference for memrank's agent-observer profile: DESIGN.md's
// scoreMemory (reference 1) written with Go's own strings.Fields, strings.ToLower and
// strings.Contains. Standard library only; tests/reference/test_go_observer.py builds and runs it.
//
// Input on stdin, JSON: {"cases": [{"task": TEXT, "memories": [{"kind": "fact", "content": TEXT,
// "relevance": 0.5, "access_count": 3}]}]}, where TEXT is {"runes": [code points]} (a Go string made
// from them, as string([]rune) makes it: a surrogate becomes U+FFFD) or {"bytes": "base64"} (the bytes
// as they are, invalid UTF-8 included).
//
// Output on stdout, JSON: {"results": [{"scores": [...], "task": [...], "contents": [[...]]}]}; task and
// contents are the code points of each TEXT as []rune reads it (each invalid byte one U+FFFD), what a
// caller must send memrank in place of invalid bytes.
//
// With -tables it prints instead {"unicode": version, "lower": [[r, code points of strings.ToLower of r]
// for every r it changes], "space": [every r strings.Fields splits on]}.
package main

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"strings"
	"unicode"
)

var kindPrior = map[string]float64{
	"decision":   0.35,
	"fact":       0.30,
	"preference": 0.25,
	"failure":    0.20,
	"attempt":    0.05,
}

type memory struct {
	Kind        string  `json:"kind"`
	Content     text    `json:"content"`
	Relevance   float64 `json:"relevance"`
	AccessCount int     `json:"access_count"`
}

type text struct {
	Runes []rune `json:"runes"`
	Bytes []byte `json:"bytes"`
}

func (t text) String() string {
	if t.Bytes != nil {
		return string(t.Bytes)
	}
	return string(t.Runes)
}

type testCase struct {
	Task     text     `json:"task"`
	Memories []memory `json:"memories"`
}

type result struct {
	Scores   []float64 `json:"scores"`
	Task     []rune    `json:"task"`
	Contents [][]rune  `json:"contents"`
}

// scoreMemory: kind prior + 0.30 x relevance + 0.25 x the share of task words (lower-cased, split on
// white space; only words of >= 3 bytes can match, the denominator counts all) found as substrings of
// the lower-cased content + min(access_count / 50, 0.10).
func scoreMemory(task string, kind string, content string, relevance float64, accessCount int) float64 {
	score := kindPrior[kind]
	score += 0.30 * relevance
	words := strings.Fields(strings.ToLower(task))
	if len(words) > 0 {
		lowered := strings.ToLower(content)
		matched := 0
		for _, w := range words {
			if len(w) >= 3 && strings.Contains(lowered, w) {
				matched++
			}
		}
		score += 0.25 * (float64(matched) / float64(len(words)))
	}
	score += math.Min(float64(accessCount)/50, 0.10)
	return score
}

func tables() any {
	lower := [][]any{}
	space := []rune{}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		got := []rune(strings.ToLower(string(r)))
		if len(got) != 1 || got[0] != r {
			lower = append(lower, []any{r, got})
		}
		if len(strings.Fields("a"+string(r)+"b")) == 2 {
			space = append(space, r)
		}
	}
	return map[string]any{"unicode": unicode.Version, "lower": lower, "space": space}
}

func main() {
	printTables := flag.Bool("tables", false, "print the lower-case and white-space tables")
	flag.Parse()
	out := json.NewEncoder(os.Stdout)
	if *printTables {
		must(out.Encode(tables()))
		return
	}
	var in struct {
		Cases []testCase `json:"cases"`
	}
	must(json.NewDecoder(os.Stdin).Decode(&in))
	results := make([]result, 0, len(in.Cases))
	for _, c := range in.Cases {
		task := c.Task.String()
		r := result{Scores: []float64{}, Task: []rune(task), Contents: [][]rune{}}
		for _, m := range c.Memories {
			content := m.Content.String()
			r.Scores = append(r.Scores, scoreMemory(task, m.Kind, content, m.Relevance, m.AccessCount))
			r.Contents = append(r.Contents, []rune(content))
		}
		results = append(results, r)
	}
	must(out.Encode(map[string]any{"results": results}))
}

func must(err error) {
	if err != nil {
		os.Stderr.WriteString("goobserver: " + err.Error() + "\n")
		os.Exit(1)
	}
}
