package redact

import "net/url"

// URL hides what a webhook URL may carry as credentials (user info, query,
// fragment), for callers that are not admins and for logs and delivery errors.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		if raw == "" {
			return ""
		}

		return "(redacted)"
	}

	redacted := u.User != nil || u.RawQuery != "" || u.Fragment != ""
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	u.ForceQuery = false
	if redacted {
		return u.String() + "?(redacted)"
	}

	return u.String()
}
