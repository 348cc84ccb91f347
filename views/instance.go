package views

// InstanceView is an instance's overview: its registration and how it
// answers now.
type InstanceView struct {
	Cluster ClusterInfo
	Health  ClusterHealth
}

// CertWarnings are the banners the instance page shows: its client
// certificate, when it ends within 30 days or has ended.
func (v InstanceView) CertWarnings() []CertWarning {
	if c := v.Cluster.ClientCert; c != nil && c.ExpiresSoon {
		return []CertWarning{{Instance: v.Cluster.Name, Cert: *c}}
	}
	return nil
}

// InstancePath is the instance page's address; section is "" for the
// overview or a sub-path such as "smart-connect".
func InstancePath(name, section string) string {
	p := "/instances/" + name
	if section != "" {
		p += "/" + section
	}
	return p
}
