// Package docblocks reads the fenced code blocks of Markdown files, with
// the attributes of their fence, so that tests can check what the docs
// tell a user to type: a YAML block says what it is in its fence
// (```yaml config=full, config=fragment, config=receiver, or
// not-config=<what>).
package docblocks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Block is one fenced code block.
type Block struct {
	File  string            // as given
	Line  int               // of the opening fence, 1-based
	Lang  string            // the fence's language, e.g. yaml
	Attrs map[string]string // key=value words after the language
	Body  string            // without the fence's indentation
}

// Name is file:line, for messages.
func (b Block) Name() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

var fence = regexp.MustCompile("^(\\s*)```(\\w*)(.*)$")

// Read returns the code blocks of the files the glob patterns match, in
// order.
func Read(patterns ...string) ([]Block, error) {
	var blocks []Block
	err := EachFile(patterns, func(file, text string) { blocks = append(blocks, parse(file, text)...) })
	return blocks, err
}

// EachFile calls f with the name and text of each file the glob patterns
// match, in order.
func EachFile(patterns []string, f func(file, text string)) error {
	for _, pattern := range patterns {
		files, err := filepath.Glob(pattern)
		if err != nil {
			return fmt.Errorf("glob %s: %w", pattern, err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			f(file, string(data))
		}
	}
	return nil
}

func parse(file, text string) []Block {
	var blocks []Block
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent := m[1]
		b := Block{File: file, Line: i + 1, Lang: m[2], Attrs: map[string]string{}}
		for _, field := range strings.Fields(m[3]) {
			k, v, _ := strings.Cut(field, "=")
			b.Attrs[k] = v
		}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		b.Body = strings.Join(body, "\n")
		blocks = append(blocks, b)
	}
	return blocks
}
