package rules

import (
	"strings"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// SQL writes the rules as conditions on an instance row of deployments_shapes_instances,
// named by its alias in the query (SQL("i")) or "" for the table's own columns. Each
// fragment is built from the same lists and constants as the predicate of the same name,
// never written out by hand, so that what the database counts is what the Go code
// decides; the values are constants of this package, never input.
type SQL string

// column is the row's column name as the query names it.
func (r SQL) column(name string) string {
	if r == "" {
		return name
	}

	return string(r) + "." + name
}

// quote is a constant as an SQL string literal.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// list is constants as an SQL list.
func list(values []string) string {
	quoted := make([]string, 0, len(values))
	for _, v := range values {
		quoted = append(quoted, quote(v))
	}

	return "(" + strings.Join(quoted, ", ") + ")"
}

// In is the row being in one of states.
func (r SQL) In(states ...string) string {
	if len(states) == 1 {
		return r.column("state") + " = " + quote(states[0])
	}

	return r.column("state") + " IN " + list(states)
}

// Counted is Counted.
func (r SQL) Counted() string {
	return r.column("state") + " NOT IN " + list(uncounted)
}

// Going is Going.
func (r SQL) Going() string {
	return r.column("state") + " IN " + list(going)
}

// Outdated is Outdated, the latest revision being the revision column of the shape row
// named shape.
func (r SQL) Outdated(shape string) string {
	return r.column("revision") + " < " + SQL(shape).column("revision")
}

// Stale is Stale against the shape row named shape.
func (r SQL) Stale(shape string) string {
	return "(" + r.In(Created) + " AND " + r.Outdated(shape) + ")"
}

// Settled is Settled.
func (r SQL) Settled() string {
	return "(" + r.In(Created) + " AND " + r.column("hook") + " != " + quote(api.LifecycleLaunchingWait) + ")"
}

// Terminating is Terminating.
func (r SQL) Terminating() string {
	return "(" + r.In(Created) + " AND " + r.column("hook") + " = " + quote(api.LifecycleTerminatingWait) + ")"
}

// Ready is Ready for a shape with (checked) or without health checks.
func (r SQL) Ready(checked bool) string {
	if !checked {
		return r.Settled()
	}

	return "(" + r.Settled() + " AND " + r.column("health") + " = " + quote(api.HealthHealthy) + ")"
}
