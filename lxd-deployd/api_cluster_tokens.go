package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

// listTokens answers GET /1.0/cluster/tokens, as `lxc cluster list-tokens`.
func (a clusterAPI) listTokens(r *http.Request) response.Response {
	return memberList(r, a.member.Pending)
}

// revokeToken answers DELETE /1.0/cluster/tokens/{member}, as `lxc cluster revoke-token`
// (cluster.RevokeToken).
func (a clusterAPI) revokeToken(r *http.Request) response.Response {
	name, err := rest.PathName(r, "member", "cluster member")
	if err != nil {
		return response.SmartError(err)
	}

	err = a.member.RevokeToken(r.Context(), name)
	if err != nil {
		return response.SmartError(err)
	}

	return response.EmptySyncResponse()
}

// updateCertificate rotates the cluster certificate and answers once every member presents
// the new one and the old one is retired, or with the members that have not moved yet
// (cluster.Rotate).
func (a clusterAPI) updateCertificate(r *http.Request) response.Response {
	result, err := a.member.Rotate(r.Context())
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(result)
}
