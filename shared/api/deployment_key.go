package api

// Roles a deployment key can have.
const (
	// DeploymentKeyRoleAdmin may read the deployment and manage its shapes' instances.
	DeploymentKeyRoleAdmin = "admin"

	// DeploymentKeyRoleReadOnly may only read the deployment, its shapes and instances.
	DeploymentKeyRoleReadOnly = "read-only"
)

// DeploymentKeysPost represents the fields required to create a deployment key.
type DeploymentKeysPost struct {
	DeploymentKeyPost `yaml:",inline"`
	DeploymentKeyPut  `yaml:",inline"`

	// Fingerprint of a trusted certificate of type "deployments" the key binds to
	// Example: 57bb0ff4340b5bb28517e062023101adf788c37846dc8b619eb2c3cb4ef29436
	CertificateFingerprint string `json:"certificate_fingerprint" yaml:"certificate_fingerprint"`
}

// DeploymentKeyPost represents the fields required to rename a deployment key.
type DeploymentKeyPost struct {
	// The name of the deployment key
	// Example: governor
	Name string `json:"name" yaml:"name"`
}

// DeploymentKeyPut represents the modifiable fields of a deployment key.
type DeploymentKeyPut struct {
	// Description of the deployment key
	// Example: Deployment key for myapp's governor
	Description string `json:"description" yaml:"description"`

	// Role of the key on the deployment: "admin" or "read-only" (default)
	// Example: admin
	Role string `json:"role" yaml:"role"`
}

// DeploymentKey represents a deployment key.
type DeploymentKey struct {
	DeploymentKeyPost `yaml:",inline"`
	DeploymentKeyPut  `yaml:",inline"`

	// Fingerprint of the certificate the key binds to
	// Read only: true
	// Example: 57bb0ff4340b5bb28517e062023101adf788c37846dc8b619eb2c3cb4ef29436
	CertificateFingerprint string `json:"certificate_fingerprint" yaml:"certificate_fingerprint"`
}

// Writable returns the modifiable fields of the key.
func (k *DeploymentKey) Writable() DeploymentKeyPut {
	return k.DeploymentKeyPut
}
