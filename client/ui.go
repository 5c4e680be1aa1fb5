package client

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// CreateUILink asks for a single-use link signing a browser in to the web view.
func (s *Server) CreateUILink(req api.UILinksPost) (*api.UILink, error) {
	var link api.UILink
	_, err := s.queryStruct(http.MethodPost, path("ui", "links"), req, "", &link)
	if err != nil {
		return nil, err
	}

	return &link, nil
}
