package registry

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// versionPattern is seed 001's version syntax: a "v", then MAJOR[.MINOR[.PATCH]]. No
// pre-release or build suffixes: a version directory name is nothing else.
var versionPattern = regexp.MustCompile(`^v[0-9]+(\.[0-9]+){0,2}$`)

// ParseVersion parses a template version ("v1" is v1.0.0, "v1.1" is v1.1.0).
func ParseVersion(s string) (*semver.Version, error) {
	if !versionPattern.MatchString(s) {
		return nil, fmt.Errorf("version %q is not valid: write v<major>[.<minor>[.<patch>]], e.g. v1 or v1.2.3", s)
	}

	return semver.NewVersion(s)
}

// IsVersion says whether s is a version directory name.
func IsVersion(s string) bool {
	return versionPattern.MatchString(s)
}

// Resolve picks, among the available version directory names, the one a request for
// version requested gets: the highest PATCH with the same MAJOR.MINOR, at least the
// requested PATCH. It never substitutes a higher MINOR (seed 001: a higher minor is
// backward compatible but has another feature set, so it must be asked for).
func Resolve(requested string, available []string) (string, error) {
	want, err := ParseVersion(requested)
	if err != nil {
		return "", err
	}

	// "~1.0.2" is >= 1.0.2, < 1.1.0. The full X.Y.Z matters: "~1" would allow any 1.x.
	constraint, err := semver.NewConstraint("~" + want.String())
	if err != nil {
		return "", err
	}

	var best *semver.Version
	bestName := ""
	for _, name := range available {
		v, err := ParseVersion(name)
		if err != nil {
			continue // Not a version directory (an example, a README): skip it.
		}

		// On a tie (v1 and v1.0.0) keep the first name in sorted order, so the answer
		// does not depend on directory listing order.
		if constraint.Check(v) && (best == nil || v.GreaterThan(best) || (v.Equal(best) && name < bestName)) {
			best, bestName = v, name
		}
	}

	if best == nil {
		sorted := SortVersions(available)
		have := "none"
		if len(sorted) > 0 {
			have = strings.Join(sorted, ", ")
		}

		return "", fmt.Errorf("no version matches %s (>= v%s, < v%d.%d.0; a higher minor version must be asked for explicitly): available versions are %s", requested, want, want.Major(), want.Minor()+1, have)
	}

	return bestName, nil
}

// SortVersions returns the version names among names, lowest first.
func SortVersions(names []string) []string {
	type named struct {
		v    *semver.Version
		name string
	}

	list := []named{}
	for _, name := range names {
		v, err := ParseVersion(name)
		if err == nil {
			list = append(list, named{v, name})
		}
	}

	sort.Slice(list, func(i, j int) bool {
		c := list[i].v.Compare(list[j].v)
		if c != 0 {
			return c < 0
		}

		return list[i].name < list[j].name
	})

	out := make([]string, 0, len(list))
	for _, n := range list {
		out = append(out, n.name)
	}

	return out
}
