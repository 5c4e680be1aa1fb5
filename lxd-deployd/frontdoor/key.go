package frontdoor

// Key is a shape's Frontend.Key: "project/deployment/shape".
func Key(project string, deployment string, shape string) string {
	return project + "/" + deployment + "/" + shape
}
