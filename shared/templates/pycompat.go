package templates

import (
	"fmt"
	"regexp"
	"strings"
)

// Deployment Manager's Python templates are Python 2/3, run here as Starlark, which is
// Python's syntax without import statements, "is" and "del". pythonCompat rewrites those
// (and refuses the statements Starlark lacks, see starlark_py2.go) and nothing else, keeping every other character in place so that the lines
// and columns in error messages are the template's own:
//
//   - an "import a.b [as c]" or "from a.b import c [as d]" line becomes "pass": the names it
//     binds are predeclared instead, with modules built from the imports (helpers/common.py,
//     helpers/extra/__init__.py) or the built-in yaml, json and math;
//   - "x is None" becomes "x == None", "x is not None" becomes "x != None";
//   - "del d[k]" becomes "d.pop(k)" (see rewriteStatement);
//   - Python 2's u'unicode' literals lose their u.

// pyImport is one imported module and the names it binds.
type pyImport struct {
	line   int
	module string // dotted module name: "helpers.common"

	// For "import module [as alias]": alias, or "" to bind the top-level package name.
	alias string

	// For "from module import name [as alias], ...": name -> alias pairs.
	from  bool
	names [][2]string
}

var (
	dottedName   = `[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*`
	importLine   = regexp.MustCompile(`^import\s+(.+?)\s*$`)
	fromLine     = regexp.MustCompile(`^from\s+(\S+)\s+import\s+(.+?)\s*$`)
	importClause = regexp.MustCompile(`^(` + dottedName + `)(?:\s+as\s+([A-Za-z_][A-Za-z0-9_]*))?$`)
	isIdentByte  = func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	statementWord = regexp.MustCompile(`^(import|from)\s`)
	modulePattern = regexp.MustCompile(`^` + dottedName + `$`)
)

// pythonCompat returns the rewritten source and the imports it found.
func pythonCompat(src string) (string, []pyImport, error) {
	out := []byte(src)
	imports := []pyImport{}
	depth := 0         // open brackets: a newline inside them does not end a statement
	quote := ""        // the open string's quote (', ", ''' or """), "" in code
	lineStart := true  // at the start of a physical line that starts a statement
	continued := false // the previous line ended with a backslash
	line := 1
	for i := 0; i < len(out); i++ {
		c := out[i]
		if quote != "" {
			switch {
			case c == '\\':
				i++
			case strings.HasPrefix(string(out[i:min(i+len(quote), len(out))]), quote):
				i += len(quote) - 1
				quote = ""
			case c == '\n':
				line++
			}

			continue
		}

		if lineStart && depth == 0 && !continued {
			j := i
			for j < len(out) && (out[j] == ' ' || out[j] == '\t') {
				j++
			}

			end := strings.IndexByte(src[j:], '\n')
			if end < 0 {
				end = len(src) - j
			}

			text := src[j : j+end]
			word := pyStatement.FindStringSubmatch(text)
			if word != nil {
				replacement, err := rewriteStatement(word[1], text, line)
				if err != nil {
					return "", nil, err
				}

				copy(out[j:], replacement)
				i = j + len(replacement) - 1
				lineStart = false
				continue
			}

			if statementWord.MatchString(text) {
				imp, err := parseImportLine(text, line)
				if err != nil {
					return "", nil, err
				}

				if imp != nil {
					imports = append(imports, *imp)
				}

				// "pass" and spaces, same length, so that the columns after it stay right.
				copy(out[j:], "pass"+strings.Repeat(" ", end-4))
				i = j + end - 1
				lineStart = false
				continue
			}
		}

		lineStart = false
		switch {
		case c == '#':
			for i < len(out) && out[i] != '\n' {
				i++
			}

			i--
		case c == '\'' || c == '"':
			quote = string(c)
			if i+2 < len(out) && out[i+1] == c && out[i+2] == c {
				quote = strings.Repeat(string(c), 3)
				i += 2
			}
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth = max(depth-1, 0)
		case c == '\n':
			line++
			lineStart = true
			continued = i > 0 && out[i-1] == '\\'
		case c == 'i' && i+2 <= len(out) && string(out[i:i+2]) == "is" && (i == 0 || !isIdentByte(out[i-1])) && (i+2 == len(out) || !isIdentByte(out[i+2])):
			rewriteIs(out, i)
			i++
		case isIdentByte(c):
			start := i
			for i+1 < len(out) && isIdentByte(out[i+1]) {
				i++
			}

			// Python 2's unicode literals: u'x' is 'x' (ur'x' is r'x'), a space for the u.
			prefix := strings.ToLower(string(out[start : i+1]))
			if (prefix == "u" || prefix == "ur") && i+1 < len(out) && (out[i+1] == '\'' || out[i+1] == '"') {
				out[start] = ' '
			}
		}
	}

	return string(out), imports, nil
}

// rewriteIs turns "is" at i into "==", or "is not" into "!=" padded with spaces.
func rewriteIs(out []byte, i int) {
	j := i + 2
	for j < len(out) && (out[j] == ' ' || out[j] == '\t') {
		j++
	}

	if j > i+2 && j+3 <= len(out) && string(out[j:j+3]) == "not" && (j+3 == len(out) || !isIdentByte(out[j+3])) {
		copy(out[i:], "!=")
		for k := i + 2; k < j+3; k++ {
			out[k] = ' '
		}

		return
	}

	copy(out[i:], "==")
}

// parseImportLine reads one import statement (without its indentation). It returns nil for
// statements that bind nothing (from __future__ import ...).
func parseImportLine(text string, line int) (*pyImport, error) {
	hash := strings.IndexByte(text, '#')
	if hash >= 0 {
		text = text[:hash]
	}

	bad := func(why string) error {
		return &lineError{line: line, msg: fmt.Sprintf("%s: %s", strings.TrimSpace(text), why)}
	}

	m := fromLine.FindStringSubmatch(strings.TrimSpace(text))
	if m != nil {
		if m[1] == "__future__" {
			return nil, nil
		}

		if strings.HasPrefix(m[1], ".") {
			return nil, bad("relative imports are not supported: import helpers by their import name (from helpers.common import f)")
		}

		if !modulePattern.MatchString(m[1]) || strings.ContainsAny(m[2], "()*;\\") {
			return nil, bad("write the import on one line as from module import name[ as alias][, ...]")
		}

		imp := &pyImport{line: line, module: m[1], from: true}
		for _, clause := range strings.Split(m[2], ",") {
			c := importClause.FindStringSubmatch(strings.TrimSpace(clause))
			if c == nil || strings.Contains(c[1], ".") {
				return nil, bad("write the import on one line as from module import name[ as alias][, ...]")
			}

			alias := c[2]
			if alias == "" {
				alias = c[1]
			}

			imp.names = append(imp.names, [2]string{c[1], alias})
		}

		return imp, nil
	}

	m = importLine.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil || strings.ContainsAny(m[1], "();\\") {
		return nil, bad("write one import per line as import module[ as alias]")
	}

	clauses := strings.Split(m[1], ",")
	if len(clauses) != 1 {
		return nil, bad("write one import per line as import module[ as alias]")
	}

	c := importClause.FindStringSubmatch(strings.TrimSpace(clauses[0]))
	if c == nil {
		return nil, bad("write one import per line as import module[ as alias]")
	}

	return &pyImport{line: line, module: c[1], alias: c[2]}, nil
}
