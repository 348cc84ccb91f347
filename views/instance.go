package views

// InstanceView is an instance's overview: its registration and how it
// answers now.
type InstanceView struct {
	Cluster ClusterInfo
	Health  ClusterHealth
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
