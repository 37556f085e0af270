package main

// The NetworkPolicies of a cluster against the traffic a Ray cluster needs, judged by cyclonus' NetworkPolicy
// simulator (github.com/mattfenwick/cyclonus pkg/matcher: BuildNetworkPolicies, Policy.IsTrafficAllowed; the engine
// kubernetes-sigs/network-policy-api's policy-assistant grew out of), on the pods KubeRay's own builders make (podsOf)
// and the policies and Namespaces as the apiserver stores them (its defaults: policyTypes, a port's protocol TCP; the
// kubernetes.io/metadata.name label of every Namespace).
//
// The traffic judged, ingress at the destination and egress at the source, all TCP (ray-operator v1.6.1):
//   - each worker -> the head's GCS port (common.GetHeadPort): KubeRay's wait-gcs-ready init container and the raylet;
//   - each pod -> each other pod of the RayCluster (head <-> every worker group, worker group <-> worker group) on the
//     ports KubeRay declares on the destination's Ray container (gcs-server, dashboard, client, metrics, serve) and the
//     first port of Ray's worker-port range (rayStartParams min-worker-port, Ray's default 10002), which the workers'
//     task calls use between nodes;
//   - a RayJob's and a RayService's KubeRay operator pod -> the head's dashboard port (rayjob_controller.go and
//     rayservice_controller.go: FetchHeadServiceURL(..., DashboardPortName)), the operator as the caller describes it;
//   - a RayJob's submitter pod (K8sJobMode) -> the head's dashboard port (`ray job submit --address`);
//   - every pod (head, workers, submitter) -> the cluster DNS, UDP 53: the workers find the GCS and the submitter the
//     dashboard by the head service's name (KubeRay's wait-gcs-ready and --address use its FQDN). On AKS that is CoreDNS,
//     pods labelled k8s-app: kube-dns in kube-system, reached through the kube-dns Service, and NetworkPolicies judge
//     the pods behind a Service (an ipBlock of the Service's IP allows nothing). TCP 53 (large answers) is not judged.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mattfenwick/cyclonus/pkg/matcher"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/common"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/apis/batch"
	networkingdefaults "k8s.io/kubernetes/pkg/apis/networking/v1"
)

// refusal is traffic the cluster's NetworkPolicies drop: the direction, the policies that select the end judged and
// allow none of it (NetworkPolicy/namespace/name), and the traffic, one line each.
type refusal struct {
	Direction string   `json:"direction"`
	Policies  []string `json:"policies"`
	Traffic   []string `json:"traffic"`
}

// flow is one connection a Ray cluster needs.
type flow struct {
	what         string
	source, dest *matcher.InternalPeer
	port         int
	portName     string
	protocol     corev1.Protocol
}

// The cluster DNS as AKS runs it: CoreDNS pods in kube-system, their UDP port named dns.
var dnsNamespace, dnsLabels = "kube-system", map[string]string{"k8s-app": "kube-dns"}

// networkRefusals: `related` holds the cluster's NetworkPolicies and Namespaces and, as a Pod, the KubeRay operator's
// pod (its namespace and labels). An object that is no Ray object KubeRay builds pods for has none.
func networkRefusals(obj map[string]interface{}, related []map[string]interface{}) (out []refusal) {
	defer func() {
		if p := recover(); p != nil { // KubeRay's builders on a spec its controller would refuse: pod-validation says why
			out = nil
		}
	}()
	m, ok := madeOf(obj)
	if !ok {
		return nil
	}
	var policies []*networkingv1.NetworkPolicy
	nsLabels := map[string]map[string]string{}
	var operator *corev1.Pod
	for _, o := range related {
		switch o["kind"] {
		case "NetworkPolicy":
			np := &networkingv1.NetworkPolicy{}
			if runtime.DefaultUnstructuredConverter.FromUnstructured(o, np) != nil {
				continue // the schema check reports it
			}
			networkingdefaults.SetObjectDefaults_NetworkPolicy(np)
			np.Namespace = namespaceName(np.Namespace)
			policies = append(policies, np)
		case "Namespace":
			ns := &corev1.Namespace{}
			if runtime.DefaultUnstructuredConverter.FromUnstructured(o, ns) == nil {
				nsLabels[ns.Name] = ns.Labels
			}
		case "Pod":
			pod := &corev1.Pod{}
			if runtime.DefaultUnstructuredConverter.FromUnstructured(o, pod) == nil {
				operator = pod
			}
		}
	}
	if len(policies) == 0 {
		return nil
	}
	peer := func(namespace string, labels map[string]string) *matcher.InternalPeer {
		ns := map[string]string{corev1.LabelMetadataName: namespace} // the apiserver sets it on every Namespace
		for k, v := range nsLabels[namespace] {
			if k != corev1.LabelMetadataName {
				ns[k] = v
			}
		}
		return &matcher.InternalPeer{PodLabels: labels, NamespaceLabels: ns, Namespace: namespace}
	}
	flows := rayFlows(obj, m, peer, operator)
	policy := matcher.BuildNetworkPolicies(false, policies)
	grouped := map[string]*refusal{}
	var order []string
	for _, f := range flows {
		verdict := policy.IsTrafficAllowed(&matcher.Traffic{Source: &matcher.TrafficPeer{Internal: f.source},
			Destination: &matcher.TrafficPeer{Internal: f.dest}, ResolvedPort: f.port, ResolvedPortName: f.portName,
			Protocol: f.protocol})
		for _, d := range []struct {
			name   string
			result *matcher.DirectionResult
		}{{"ingress", verdict.Ingress}, {"egress", verdict.Egress}} {
			if d.result.IsAllowed() {
				continue
			}
			var names []string
			for _, t := range d.result.DenyingTargets {
				for _, np := range t.SourceRules {
					names = append(names, "NetworkPolicy/"+np.Namespace+"/"+np.Name)
				}
			}
			sort.Strings(names)
			names = dedupe(names)
			key := d.name + " " + strings.Join(names, ",")
			if grouped[key] == nil {
				grouped[key] = &refusal{Direction: d.name, Policies: names}
				order = append(order, key)
			}
			grouped[key].Traffic = append(grouped[key].Traffic, f.what)
		}
	}
	for _, key := range order {
		out = append(out, *grouped[key])
	}
	return out
}

// rayFlows is the traffic the object's Ray cluster needs (see the file's comment).
func rayFlows(obj map[string]interface{}, m made, peer func(string, map[string]string) *matcher.InternalPeer, operator *corev1.Pod) []flow {
	namespace := m.cluster.Namespace
	type end struct {
		role  string
		pod   corev1.Pod
		peer  *matcher.InternalPeer
		count int
		ports map[int]string
	}
	var head *end
	var members []*end
	var submitter *end
	for _, b := range podsOf(obj) {
		e := &end{role: b.role, pod: b.pod, peer: peer(namespace, b.pod.Labels), count: b.count}
		switch {
		case b.role == "head":
			e.ports = rayPorts(b.pod, m.cluster.Spec.HeadGroupSpec.RayStartParams)
			head = e
			members = append(members, e)
		case b.role == "submitter":
			// The Job's pods also carry the labels the apiserver's Job strategy adds to its template (generateSelector).
			labels := map[string]string{batchv1.JobNameLabel: m.job.Name, batch.LegacyJobNameLabel: m.job.Name}
			for k, v := range b.pod.Labels {
				labels[k] = v
			}
			e.peer = peer(namespace, labels)
			submitter = e
		default:
			for _, g := range m.cluster.Spec.WorkerGroupSpecs {
				if b.role == "worker "+g.GroupName {
					e.ports = rayPorts(b.pod, g.RayStartParams)
				}
			}
			members = append(members, e)
		}
	}
	if head == nil {
		return nil
	}
	gcs, err := strconv.Atoi(common.GetHeadPort(m.cluster.Spec.HeadGroupSpec.RayStartParams))
	if err != nil {
		gcs = utils.DefaultGcsServerPort
	}
	dashboard := int(utils.DefaultDashboardPort)
	if len(head.pod.Spec.Containers) > utils.RayContainerIndex {
		dashboard = int(utils.FindContainerPort(&head.pod.Spec.Containers[utils.RayContainerIndex], utils.DashboardPortName, utils.DefaultDashboardPort))
	}
	var flows, mesh []flow // the GCS, dashboard connections first, the others after
	to := func(from string, source *matcher.InternalPeer, dest *end, port int, name string) {
		label := strconv.Itoa(port)
		if name != "" {
			label += " (" + name + ")"
		} else if dest == head && port == gcs {
			label += " (GCS)"
		}
		f := flow{fmt.Sprintf("%s -> %s pod TCP %s", from, dest.role, label), source, dest.peer, port, name, corev1.ProtocolTCP}
		if dest == head && (port == gcs || port == dashboard) {
			flows = append(flows, f)
		} else {
			mesh = append(mesh, f)
		}
	}
	for _, src := range members {
		for _, dst := range members {
			if src == dst && src.count < 2 {
				continue // a group of one pod: no other pod of its own
			}
			if src.role != "head" && dst == head {
				to(src.role+" pod", src.peer, dst, gcs, head.ports[gcs]) // wait-gcs-ready, the raylet: first
			}
			ports := make([]int, 0, len(dst.ports))
			for p := range dst.ports {
				if !(dst == head && p == gcs && src.role != "head") {
					ports = append(ports, p)
				}
			}
			sort.Ints(ports)
			for _, p := range ports {
				to(src.role+" pod", src.peer, dst, p, dst.ports[p])
			}
		}
	}
	if operator != nil && (m.job != nil || m.service != nil) {
		to("the KubeRay operator pod ("+namespaceName(operator.Namespace)+")", peer(namespaceName(operator.Namespace), operator.Labels),
			head, dashboard, utils.DashboardPortName)
	}
	if submitter != nil {
		to("submitter pod", submitter.peer, head, dashboard, utils.DashboardPortName)
	}
	dns := peer(dnsNamespace, dnsLabels)
	for _, src := range append(members, submitter) {
		if src != nil {
			mesh = append(mesh, flow{fmt.Sprintf("%s pod -> cluster DNS (%s pods %s) UDP 53", src.role, dnsNamespace, "k8s-app=kube-dns"),
				src.peer, dns, 53, "dns", corev1.ProtocolUDP})
		}
	}
	return append(flows, mesh...)
}

func dedupe(sorted []string) []string {
	var out []string
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// rayPorts are the ports other pods of the Ray cluster connect to on `pod`: those KubeRay declares on its Ray
// container, and the first of Ray's worker-port range.
func rayPorts(pod corev1.Pod, params map[string]string) map[int]string {
	ports := map[int]string{}
	if len(pod.Spec.Containers) > utils.RayContainerIndex {
		for _, p := range pod.Spec.Containers[utils.RayContainerIndex].Ports {
			if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
				ports[int(p.ContainerPort)] = p.Name
			}
		}
	}
	minWorker := 10002 // Ray's default --min-worker-port
	if v, err := strconv.Atoi(strings.Trim(params["min-worker-port"], `"`)); err == nil && v > 0 {
		minWorker = v
	}
	if _, ok := ports[minWorker]; !ok {
		ports[minWorker] = ""
	}
	return ports
}
