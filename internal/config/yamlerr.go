package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The YAML decoder words its errors for Go programmers ("cannot unmarshal
// !!int `30` into time.Duration", "field x not found in type
// config.ToolsConfig"). readableYAML rewords them for the person editing
// config.yaml: which key, what it wants, with the line.
var (
	typeMismatch = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")
	unknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type .+$`)
)

// readableYAML rewords err, from decoding data into a value of type into,
// for people. section prefixes key paths ("telegram" when data is that
// section alone); lines says whether line numbers are data's own, worth
// showing. Errors it does not know stay as they are.
func readableYAML(err error, data []byte, into reflect.Type, section string, lines bool) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return err
	}
	var out []string
	for _, e := range te.Errors {
		out = append(out, readableLine(e, &root, into, section, lines))
	}
	return errors.New(strings.Join(out, "; "))
}

func readableLine(e string, root *yaml.Node, into reflect.Type, section string, lines bool) string {
	where := func(line string) string {
		if lines {
			return "line " + line + ": "
		}
		return ""
	}
	if m := typeMismatch.FindStringSubmatch(e); m != nil {
		n, _ := strconv.Atoi(m[1])
		path := findPath(root, n, func(key, value *yaml.Node) bool { return value.Line == n && value.Tag == "!!"+m[2] })
		return fmt.Sprintf("%s%s: want %s, not %s", where(m[1]), joinPath(section, path), wanted(m[4]), given(m[2], m[3]))
	}
	if m := unknownField.FindStringSubmatch(e); m != nil {
		n, _ := strconv.Atoi(m[1])
		path := findPath(root, n, func(key, _ *yaml.Node) bool { return key.Line == n && key.Value == m[2] })
		parent := path[:max(len(path)-1, 0)]
		msg := fmt.Sprintf("%sunknown key %s", where(m[1]), joinPath(section, path))
		if keys := keysOf(into, parent); len(keys) > 0 {
			msg += fmt.Sprintf(" (%s takes %s)", joinPath(section, parent), strings.Join(keys, ", "))
		}
		return msg
	}
	return e
}

// findPath is the key path (["tools", "shell_timeout"]) to the first
// mapping entry, in document order, that match accepts.
func findPath(n *yaml.Node, line int, match func(key, value *yaml.Node) bool) []string {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p := findPath(c, line, match); p != nil {
				return p
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if match(k, v) {
				return []string{k.Value}
			}
			if p := findPath(v, line, match); p != nil {
				return append([]string{k.Value}, p...)
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if c.Line == line && c.Kind == yaml.ScalarNode && match(&yaml.Node{}, c) {
				return []string{"[" + strconv.Itoa(i) + "]"}
			}
			if p := findPath(c, line, match); p != nil {
				return append([]string{"[" + strconv.Itoa(i) + "]"}, p...)
			}
		}
	}
	return nil
}

func joinPath(section string, path []string) string {
	var b strings.Builder
	b.WriteString(section)
	for _, p := range path {
		if b.Len() > 0 && !strings.HasPrefix(p, "[") {
			b.WriteString(".")
		}
		b.WriteString(p)
	}
	if b.Len() == 0 {
		return "the top level"
	}
	return b.String()
}

// wanted says in words what a Go type takes in YAML.
func wanted(goType string) string {
	switch {
	case goType == "time.Duration":
		return "a duration like 30s"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "text"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case strings.HasPrefix(goType, "[]"):
		return "a list (one \"- item\" per line)"
	case strings.HasPrefix(goType, "map["):
		return "a section of \"key: value\" lines"
	}
	return "a section of \"key: value\" lines indented below it"
}

// given says in words what the file has instead.
func given(tag, value string) string {
	switch tag {
	case "map":
		return "a section"
	case "seq":
		return "a list"
	}
	if value == "" {
		return "an empty value"
	}
	return value
}

// keysOf lists the YAML keys the struct at path inside t takes, for
// telling what a misspelt key could have been.
func keysOf(t reflect.Type, path []string) []string {
	for _, p := range path {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if strings.HasPrefix(p, "[") {
			continue
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := fieldByKey(t, p)
		if !ok {
			return nil
		}
		t = f.Type
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		if k := yamlKey(t.Field(i)); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if yamlKey(t.Field(i)) == key {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// yamlKey is the key a struct field is read from ("" for inline fields).
func yamlKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if strings.Contains(opts, "inline") {
		return ""
	}
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}
