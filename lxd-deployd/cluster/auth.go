package cluster

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
)

// ForwardedCallerHeader carries, on a request one member forwards to another, who asked
// the forwarding member. The receiving member believes it only from a caller that
// presented a current member's own certificate (mutual TLS proves which member), and
// looks any certificate it names up in its own trust store, so a revoked client stays
// revoked. Access is then checked for that caller as if it had come directly, and audit
// records name it, not "cluster-member".
const ForwardedCallerHeader = "X-Lxd-Deployd-Forwarded-Caller"

// forwardedCaller is what the header holds: the parts of an auth.Caller that identify it.
type forwardedCaller struct {
	Protocol        string `json:"protocol"`
	Name            string `json:"name,omitempty"`
	Fingerprint     string `json:"fingerprint,omitempty"`
	Audience        string `json:"audience,omitempty"`
	Subject         string `json:"subject,omitempty"`
	Instance        string `json:"instance,omitempty"`
	InstanceProject string `json:"instance_project,omitempty"`
}

// SetForwardedCaller names the request's original caller on a request to another member.
func SetForwardedCaller(request *http.Request, caller *auth.Caller) error {
	if caller == nil || !caller.Trusted {
		return errors.New("only a trusted caller's request is forwarded")
	}

	data, err := json.Marshal(forwardedCaller{Protocol: caller.Protocol, Name: caller.Name, Fingerprint: caller.Fingerprint, Audience: caller.Audience, Subject: caller.Subject, Instance: caller.Instance, InstanceProject: caller.InstanceProject})
	if err != nil {
		return err
	}

	request.Header.Set(ForwardedCallerHeader, base64.RawURLEncoding.EncodeToString(data))
	return nil
}

// AuthenticateTLS turns an HTTPS peer into a caller: another member by its own
// certificate (as recorded with it: a removed member's finds nothing; only when clustered),
// the caller a member forwards for, or whoever the trust store says. The cluster
// certificate is no credential here at all.
func AuthenticateTLS(r *http.Request, store Store, clustered bool) (*auth.Caller, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return &auth.Caller{Protocol: auth.ProtocolTLS}, nil
	}

	now := time.Now()
	peer := r.TLS.PeerCertificates[0]
	fingerprint := auth.Fingerprint(peer)
	var caller *auth.Caller
	err := store.Read(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		caller = nil
		var trusted []auth.TrustedCertificate
		if clustered {
			member, err := db.GetMemberByFingerprint(ctx, tx, fingerprint)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}

			if member != nil && !now.Before(peer.NotBefore) && !now.After(peer.NotAfter) {
				trusted = append(trusted, auth.TrustedCertificate{Fingerprint: member.CertificateFingerprint, Type: auth.CertificateTypeMember, Name: member.Name})
			}
		}

		if len(trusted) == 0 {
			certs, err := db.GetCertificates(ctx, tx)
			if err != nil {
				return err
			}

			for _, c := range certs {
				trusted = append(trusted, auth.TrustedCertificate{Fingerprint: c.Fingerprint, Type: c.Type, Name: c.Name})
			}
		}

		caller = auth.AuthenticateTLS(r.TLS.PeerCertificates, trusted, now)
		header := r.Header.Get(ForwardedCallerHeader)
		if header == "" || caller.CertificateType != auth.CertificateTypeMember {
			return nil
		}

		var err error
		caller, err = resolveForwarded(ctx, tx, caller.Name, header)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read trust store: %w", err)
	}

	return caller, nil
}

// resolveForwarded turns the header a member sent into the caller it forwards for, as
// this member's trust store knows it now.
func resolveForwarded(ctx context.Context, tx *sql.Tx, member string, header string) (*auth.Caller, error) {
	untrusted := &auth.Caller{Protocol: auth.ProtocolTLS, Via: member}
	data, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		return untrusted, nil
	}

	var f forwardedCaller
	err = json.Unmarshal(data, &f)
	if err != nil {
		return untrusted, nil
	}

	switch f.Protocol {
	case auth.ProtocolUnix:
		return &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true, Name: f.Name, Via: member}, nil
	case auth.ProtocolTLS, auth.ProtocolGovernor:
	default:
		return untrusted, nil
	}

	if len(f.Fingerprint) != 64 {
		return untrusted, nil
	}

	cert, err := db.GetCertificate(ctx, tx, f.Fingerprint)
	if err != nil || cert.Fingerprint != f.Fingerprint {
		return untrusted, nil //nolint:nilerr // an unknown certificate is an untrusted caller
	}

	caller := &auth.Caller{Protocol: f.Protocol, Trusted: true, Fingerprint: cert.Fingerprint, CertificateType: cert.Type, Name: cert.Name, Via: member}
	if f.Protocol == auth.ProtocolGovernor {
		caller.Audience, caller.Subject, caller.Instance, caller.InstanceProject = f.Audience, f.Subject, f.Instance, f.InstanceProject
	}

	return caller, nil
}
