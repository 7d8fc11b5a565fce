package gateway_test

import (
	"fmt"
	"go/ast"
	gotoken "go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestRoomsReadTopToBottom holds the package to its layout: every file
// names only what files below it define, so a message's path reads from
// gateway.go down and no room calls back up into one that depends on it.
// A name one file uses from another is an edge; the edges must not close
// a circle. It type-checks the package, so a method call counts for the
// file that defines the method.
func TestRoomsReadTopToBottom(t *testing.T) {
	deps := fileDeps(t, ".")
	if cycle := findCycle(deps); cycle != nil {
		t.Fatalf("files call each other in a circle: %s\n(each uses a name the next defines: %s)",
			strings.Join(cycle, " → "), why(deps, cycle))
	}
}

// fileDeps maps each non-test file of the package in dir to the files
// whose top-level names (functions, types, methods, fields, constants,
// variables) it uses, with those names.
func fileDeps(t *testing.T, dir string) map[string]map[string][]string {
	t.Helper()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo, Dir: dir}
	pkgs, err := packages.Load(cfg, ".")
	if err != nil {
		t.Fatalf("load the package: %v", err)
	}
	if len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		t.Fatalf("load the package: %v", pkgs[0].Errors)
	}
	p := pkgs[0]
	fileOf := func(pos gotoken.Pos) string { return filepath.Base(p.Fset.Position(pos).Filename) }
	deps := map[string]map[string][]string{}
	for _, f := range p.Syntax {
		from := fileOf(f.Pos())
		deps[from] = map[string][]string{}
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := p.TypesInfo.Uses[id]
			if obj == nil || obj.Pkg() != p.Types || !obj.Pos().IsValid() {
				return true
			}
			if v, ok := obj.(*types.Var); ok && !v.IsField() && v.Parent() != p.Types.Scope() {
				return true // a local variable
			}
			if c, ok := obj.(*types.Const); ok && c.Parent() != p.Types.Scope() {
				return true
			}
			if tn, ok := obj.(*types.TypeName); ok && tn.Parent() != p.Types.Scope() {
				return true
			}
			to := fileOf(obj.Pos())
			if to != from && !strings.HasSuffix(to, "_test.go") {
				deps[from][to] = append(deps[from][to], id.Name)
			}
			return true
		})
	}
	return deps
}

// findCycle returns one circle of files, first file repeated at the end,
// or nil.
func findCycle(deps map[string]map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(string) []string
	visit = func(f string) []string {
		state[f] = open
		stack = append(stack, f)
		for _, to := range sortedKeys(deps[f]) {
			switch state[to] {
			case open:
				i := len(stack) - 1
				for stack[i] != to {
					i--
				}
				return append(append([]string(nil), stack[i:]...), to)
			case unseen:
				if c := visit(to); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[f] = done
		return nil
	}
	for _, f := range sortedKeys(deps) {
		if state[f] == unseen {
			if c := visit(f); c != nil {
				return c
			}
		}
	}
	return nil
}

func why(deps map[string]map[string][]string, cycle []string) string {
	var b []string
	for i := 0; i+1 < len(cycle); i++ {
		names := dedupe(deps[cycle[i]][cycle[i+1]])
		b = append(b, fmt.Sprintf("%s uses %s", cycle[i], strings.Join(names, ", ")))
	}
	return strings.Join(b, "; ")
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
