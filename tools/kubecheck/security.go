package main

// The PodSecurity admission of the pinned kube-apiserver (k8s.io/pod-security-admission, its own policy
// checks and label parsing): a namespace's pod-security.kubernetes.io/enforce level (and -version) forbids
// the pods that violate it, and a Namespace whose labels name no level or version is itself refused. With
// no label the apiserver's default configuration enforces "privileged" (nothing is checked), as on AKS.

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

var podSecurity = func() policy.Evaluator {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(err) // the library's own checks: they always validate
	}
	return evaluator
}()

// defaultPodSecurity is the apiserver's default PodSecurityConfiguration (no admission configuration file).
var defaultPodSecurity = psaapi.Policy{
	Enforce: psaapi.LevelVersion{Level: psaapi.LevelPrivileged, Version: psaapi.LatestVersion()},
	Audit:   psaapi.LevelVersion{Level: psaapi.LevelPrivileged, Version: psaapi.LatestVersion()},
	Warn:    psaapi.LevelVersion{Level: psaapi.LevelPrivileged, Version: psaapi.LatestVersion()},
}

// namespacePolicy is what the namespace's labels enforce; an error when they name no valid level or version.
func namespacePolicy(labels map[string]string) (psaapi.Policy, error) {
	p, errs := psaapi.PolicyToEvaluate(labels, defaultPodSecurity)
	return p, errs.ToAggregate()
}

// securityError is the PodSecurity admission's refusal of one pod (as the apiserver words it), or nil.
func (ns namespaceObjects) securityError(pod corev1.Pod, template string) *fieldError {
	if ns.namespace == nil {
		return nil
	}
	p, err := namespacePolicy(ns.namespace.Labels)
	if err != nil || p.Enforce.Level == psaapi.LevelPrivileged {
		return nil // a Namespace with invalid labels is refused itself (namespaceCauses)
	}
	result := policy.AggregateCheckResults(podSecurity.EvaluatePod(p.Enforce, &pod.ObjectMeta, &pod.Spec))
	if result.Allowed {
		return nil
	}
	msg := fmt.Sprintf("violates PodSecurity %q: %s", p.Enforce.String(), result.ForbiddenDetail())
	return &fieldError{Field: template, Type: string(metav1.CauseTypeForbidden), Detail: msg, Message: msg,
		Object: "Namespace/" + ns.namespace.Name}
}

// namespaceCauses is the PodSecurity admission's validation of a Namespace on create: its pod-security labels.
func namespaceCauses(obj map[string]interface{}) []metav1.StatusCause {
	namespace := &corev1.Namespace{}
	if runtime.DefaultUnstructuredConverter.FromUnstructured(obj, namespace) != nil {
		return nil // the schema check reports it
	}
	_, errs := psaapi.PolicyToEvaluate(namespace.Labels, defaultPodSecurity)
	causes := make([]metav1.StatusCause, 0, len(errs))
	for _, e := range errs {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(e.Type), Field: e.Field, Message: e.ErrorBody()})
	}
	return causes
}
