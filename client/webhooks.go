package client

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func webhookPath(deployment string, segments ...string) string {
	return path(append([]string{"deployments", deployment, "webhook"}, segments...)...)
}

// RequestShapeScale asks the deployment's governor, through its webhook, to bring a shape to
// target instances. It returns the id of the queued event.
func (s *Server) RequestShapeScale(deployment string, shape string, req api.DeploymentShapeScaleRequest) (string, error) {
	var answer map[string]string
	_, err := s.queryStruct(http.MethodPost, s.withProject(path("deployments", deployment, "shapes", shape, "scale-request")), req, "", &answer)
	return answer["id"], err
}

// PingWebhook queues a ping event and returns its id.
func (s *Server) PingWebhook(deployment string) (string, error) {
	var answer map[string]string
	_, err := s.queryStruct(http.MethodPost, s.withProject(webhookPath(deployment, "ping")), nil, "", &answer)
	return answer["id"], err
}

// GetWebhookDeliveries returns a deployment's recent deliveries, newest first.
func (s *Server) GetWebhookDeliveries(deployment string) ([]api.WebhookDelivery, error) {
	var deliveries []api.WebhookDelivery
	_, err := s.queryStruct(http.MethodGet, s.withProject(webhookPath(deployment, "deliveries")), nil, "", &deliveries)
	return deliveries, err
}

// GetWebhookDelivery returns one delivery with the event as sent.
func (s *Server) GetWebhookDelivery(deployment string, id string) (*api.WebhookDelivery, error) {
	var delivery api.WebhookDelivery
	_, err := s.queryStruct(http.MethodGet, s.withProject(webhookPath(deployment, "deliveries", id)), nil, "", &delivery)
	if err != nil {
		return nil, err
	}

	return &delivery, nil
}

// RedeliverWebhook sends a delivery again.
func (s *Server) RedeliverWebhook(deployment string, id string) error {
	_, err := s.queryStruct(http.MethodPost, s.withProject(webhookPath(deployment, "deliveries", id, "redeliver")), nil, "", nil)
	return err
}

// GetWebhookSecret returns the secret deliveries are signed with; rotate replaces it first.
func (s *Server) GetWebhookSecret(deployment string, rotate bool) (string, error) {
	method := http.MethodGet
	if rotate {
		method = http.MethodPost
	}

	var secret api.DeploymentWebhookSecret
	_, err := s.queryStruct(method, s.withProject(webhookPath(deployment, "secret")), nil, "", &secret)
	return secret.Secret, err
}
