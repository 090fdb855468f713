package crs

// CertManagerV1 is cert-manager's ClusterIssuer and Certificate.
const CertManagerV1 = "cert-manager.io/v1"

// ClusterIssuerSpec is a cert-manager ClusterIssuer: exactly one issuer kind is set.
type ClusterIssuerSpec struct {
	SelfSigned *SelfSignedIssuer `json:"selfSigned,omitempty"`
	ACME       *ACMEIssuer       `json:"acme,omitempty"`
	CA         *CAIssuer         `json:"ca,omitempty"`
}

// TypeMeta implements Spec.
func (ClusterIssuerSpec) TypeMeta() TypeMeta {
	return TypeMeta{APIVersion: CertManagerV1, Kind: "ClusterIssuer"}
}

// SelfSignedIssuer has no settings: its presence selects the kind ({}).
type SelfSignedIssuer struct{}

// ACMEIssuer is an ACME account and how it proves names.
type ACMEIssuer struct {
	Email  string `json:"email"`
	Server string `json:"server"`
	// PrivateKeySecretRef is where cert-manager keeps the account key it generates.
	PrivateKeySecretRef LocalObjectReference `json:"privateKeySecretRef"`
	Solvers             []ACMESolver         `json:"solvers"`
}

// ACMESolver is one challenge solver.
type ACMESolver struct {
	HTTP01 *ACMEHTTP01 `json:"http01,omitempty"`
}

// ACMEHTTP01 solves HTTP-01 challenges through an Ingress.
type ACMEHTTP01 struct {
	Ingress ACMEHTTP01Ingress `json:"ingress"`
}

// ACMEHTTP01Ingress is the class of the Ingress cert-manager creates for a challenge.
type ACMEHTTP01Ingress struct {
	IngressClassName string `json:"ingressClassName"`
}

// CAIssuer signs with the key pair in a kubernetes.io/tls Secret.
type CAIssuer struct {
	SecretName string `json:"secretName"`
}

// SelfSignedClusterIssuer is a ClusterIssuer that self-signs.
func SelfSignedClusterIssuer() ClusterIssuerSpec {
	return ClusterIssuerSpec{SelfSigned: &SelfSignedIssuer{}}
}

// ACMEClusterIssuer is a ClusterIssuer of the ACME account email at server, its key in the
// Secret accountKeySecret, proving names by HTTP-01 through Ingresses of ingressClass.
func ACMEClusterIssuer(email, server, accountKeySecret, ingressClass string) ClusterIssuerSpec {
	return ClusterIssuerSpec{ACME: &ACMEIssuer{
		Email: email, Server: server,
		PrivateKeySecretRef: LocalObjectReference{Name: accountKeySecret},
		Solvers:             []ACMESolver{{HTTP01: &ACMEHTTP01{Ingress: ACMEHTTP01Ingress{IngressClassName: ingressClass}}}},
	}}
}

// CAClusterIssuer is a ClusterIssuer signing with the CA in secretName (in cert-manager's
// cluster resource namespace).
func CAClusterIssuer(secretName string) ClusterIssuerSpec {
	return ClusterIssuerSpec{CA: &CAIssuer{SecretName: secretName}}
}

// CertificateSpec is a cert-manager Certificate.
type CertificateSpec struct {
	SecretName string    `json:"secretName"`
	CommonName string    `json:"commonName"`
	DNSNames   []string  `json:"dnsNames"`
	IssuerRef  IssuerRef `json:"issuerRef"`
}

// TypeMeta implements Spec.
func (CertificateSpec) TypeMeta() TypeMeta {
	return TypeMeta{APIVersion: CertManagerV1, Kind: "Certificate"}
}

// IssuerRef names the issuer that signs a Certificate.
type IssuerRef struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
}

// Certificate is a certificate for commonName and dnsNames, written to the Secret
// secretName, signed by the ClusterIssuer clusterIssuer.
func Certificate(secretName, commonName string, dnsNames []string, clusterIssuer string) CertificateSpec {
	return CertificateSpec{
		SecretName: secretName, CommonName: commonName, DNSNames: dnsNames,
		IssuerRef: IssuerRef{Group: "cert-manager.io", Kind: "ClusterIssuer", Name: clusterIssuer},
	}
}
