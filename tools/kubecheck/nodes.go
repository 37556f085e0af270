package main

// The `node-pools` op: the Node an AKS node pool would register, judged as the kubelet and the apiserver judge
// it. AKS hands a pool's node_labels to the kubelet as --node-labels and its node_taints as --register-with-taints:
// the apiserver's Node validation (label syntax; the taints' keys, values and effects) and the kubelet's rule for
// --node-labels (k8s.io/kubelet/pkg/apis: no kubernetes.io or k8s.io label outside the set a kubelet may set on
// itself, as cmd/kubelet/app/options.ValidateKubeletFlags applies it) decide whether its nodes ever join.

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/apis/core/validation"
)

// nodePoolCauses are the refusals of one pool's Node (its name, node_labels and node_taints only).
func nodePoolCauses(obj map[string]interface{}) []metav1.StatusCause {
	node, internal := &corev1.Node{}, &api.Node{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, node); err != nil {
		return []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: fmt.Sprintf("the pool's Node does not decode: %v", err)}}
	}
	corev1defaults.SetObjectDefaults_Node(node)
	if err := corev1defaults.Convert_v1_Node_To_core_Node(node, internal, nil); err != nil {
		return []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: err.Error()}}
	}
	var causes []metav1.StatusCause
	for _, e := range validation.ValidateNode(internal) { // what the Node REST strategy validates on create
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(e.Type), Field: e.Field, Message: e.ErrorBody()})
	}
	var refused []string
	for key := range node.Labels {
		if kubernetesNamespace(key) && !kubeletapis.IsKubeletLabel(key) {
			refused = append(refused, key)
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeFieldValueNotSupported, Field: "metadata.labels",
			Message: fmt.Sprintf("the kubelet refuses --node-labels %s: in the kubernetes.io and k8s.io namespaces only labels with a prefix of "+
				"(%s) or in (%s) may be set", strings.Join(refused, ", "), strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "),
				strings.Join(kubeletapis.KubeletLabels(), ", "))})
	}
	return causes
}

// kubernetesNamespace: the label's prefix is kubernetes.io, k8s.io or a subdomain of either (isKubernetesLabel of
// cmd/kubelet/app/options, which is not exported and whose package would link the whole kubelet).
func kubernetesNamespace(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	if !found {
		return false
	}
	return prefix == "kubernetes.io" || strings.HasSuffix(prefix, ".kubernetes.io") || prefix == "k8s.io" || strings.HasSuffix(prefix, ".k8s.io")
}
