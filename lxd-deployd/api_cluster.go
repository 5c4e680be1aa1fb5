package main

import (
	"context"
	"crypto/x509"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/authz"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/cluster"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// clusterAPI serves /1.0/cluster: members, join tokens and joining; package cluster does
// the work.
type clusterAPI struct {
	// member is this daemon as a member of its cluster.
	member *cluster.Member

	// events are this member's own events, streamed to the other members.
	events *events.Server
}

// clusterEndpoints are the routes of the cluster API.
func clusterEndpoints(a clusterAPI) []rest.Endpoint {
	admin := rest.Action{Access: allowAdmin}
	// Join tokens and the cluster certificate are credentials (authz.RefuseSessionCredentials).
	secretRead := rest.Action{Access: allowSecretRead}
	credentialWrite := rest.Action{Access: allowCredentialWrite}
	with := func(base rest.Action, h rest.HandlerFunc) rest.Action {
		base.Handler = h
		return base
	}

	return []rest.Endpoint{
		{
			Path: "/1.0/cluster",
			Get:  with(admin, a.get),
		},
		{
			Path: "/1.0/cluster/members",
			Get:  with(admin, a.listMembers),
			Post: with(credentialWrite, a.createJoinToken),
		},
		{
			// A name yet to join is a pending member: GET shows its token, DELETE revokes it.
			Path:   "/1.0/cluster/members/{member}",
			Get:    with(admin, a.getMember),
			Delete: with(admin, a.deleteMember),
		},
		{
			Path: "/1.0/cluster/tokens",
			Get:  with(secretRead, a.listTokens),
		},
		{
			Path:   "/1.0/cluster/tokens/{member}",
			Get:    with(secretRead, a.getMember),
			Delete: with(credentialWrite, a.revokeToken),
		},
		{
			Path: "/1.0/cluster/certificate",
			Post: with(credentialWrite, a.updateCertificate),
		},
		{
			Path: cluster.MemberEventsPath,
			Get:  rest.Action{Handler: a.memberEvents, Access: a.allowMember},
		},
		{
			// Public: a new member has no trusted certificate yet; the join token's secret
			// is what authenticates it, and the handler refuses anything else.
			Path: "/1.0/cluster/join",
			Post: rest.Action{Handler: a.join, Public: true},
		},
	}
}

func (a clusterAPI) get(r *http.Request) response.Response {
	return response.SyncResponse(api.Cluster{ServerName: a.member.Name(), Enabled: a.member.Clustered()})
}

func (a clusterAPI) listMembers(r *http.Request) response.Response {
	return memberList(r, a.member.Members)
}

// memberList answers a list of members (or of pending ones) the LXD way: their URLs
// without recursion, the members themselves with it.
func memberList(r *http.Request, list func(ctx context.Context) ([]api.ClusterMember, error)) response.Response {
	level, err := rest.Recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	members, err := list(r.Context())
	if err != nil {
		return response.SmartError(err)
	}

	if level == 0 {
		urls := make([]string, 0, len(members))
		for _, m := range members {
			urls = append(urls, api.ClusterMemberURL(m.ServerName))
		}

		return response.SyncResponse(urls)
	}

	return response.SyncResponse(members)
}

func (a clusterAPI) getMember(r *http.Request) response.Response {
	name, err := rest.PathName(r, "member", "cluster member")
	if err != nil {
		return response.SmartError(err)
	}

	member, err := a.member.Get(r.Context(), name)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(member)
}

// createJoinToken issues a single-use join token for a new member (cluster.CreateJoinToken).
func (a clusterAPI) createJoinToken(r *http.Request) response.Response {
	if !a.member.Clustered() {
		return response.SmartError(cluster.ErrNoJoinTokens)
	}

	var req api.ClusterMembersPost
	err := rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	err = validate.Name("cluster member", req.ServerName)
	if err != nil {
		return response.SmartError(rest.BadRequest(err))
	}

	token, err := a.member.CreateJoinToken(r.Context(), req.ServerName)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(token)
}

// join redeems a join token (cluster.Redeem): the new member gets the cluster key pair and
// the database addresses to join.
func (a clusterAPI) join(r *http.Request) response.Response {
	if !a.member.Clustered() {
		return response.SmartError(cluster.ErrNotClustered)
	}

	var req api.ClusterJoinPost
	err := rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	var peers []*x509.Certificate
	if r.TLS != nil {
		peers = r.TLS.PeerCertificates
	}

	joined, err := a.member.Redeem(r.Context(), req, peers)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(joined)
}

// deleteMember removes a member from the cluster, or revokes the join token of a member
// yet to join (cluster.Remove); an offline member needs ?force=1.
func (a clusterAPI) deleteMember(r *http.Request) response.Response {
	name, err := rest.PathName(r, "member", "cluster member")
	if err != nil {
		return response.SmartError(err)
	}

	err = a.member.Remove(r.Context(), name, rest.ForceParam(r))
	if err != nil {
		return response.SmartError(err)
	}

	return response.EmptySyncResponse()
}

// allowMember lets through only another member itself: a caller presenting a current
// member's own certificate, not a request it forwards for someone.
func (a clusterAPI) allowMember(r *http.Request) error {
	return authz.Member(auth.CallerFromContext(r.Context()), a.member.Clustered(), r.URL.Path)
}

// memberEvents streams this member's own events to a member relaying them.
func (a clusterAPI) memberEvents(r *http.Request) response.Response {
	return response.ManualResponse(func(w http.ResponseWriter) error {
		return a.events.ServeMember(w, r)
	})
}
