"""The words of harness.gate.schema_check's findings: each stage's rule (the README's table), its fix, what a finding of
it says of the object, and the narrower fixes some refusals call for."""
from __future__ import annotations

from harness.gate.sources import queue_name

# The rules of the stages above (the README's table), the fix for each and what a finding of it says.
RULES = {
    "api-validation": "every custom resource passes the apiserver's own create validation (OpenAPI schema, x-kubernetes-validations CEL rules, "
                      "metadata), and every built-in object its create validation (metadata; the spec by the REST strategy of its kind "
                      "for the kinds tools/kubecheck knows: core, apps, batch, RBAC, scheduling, networking, policy), offline",
    "kueue-webhook": "every Kueue object and RayJob, and every RayCluster and RayService of an integration the cluster's Kueue manager "
                     "runs, passes Kueue's validating webhook (its own code at the pinned version; the Ray kinds' when queued), and every Kueue "
                     "object decodes into the typed object Kueue's controllers read (a kind without a webhook too), offline",
    "kuberay-validation": "every RayJob, RayCluster and RayService passes what the pinned KubeRay operator's controllers validate "
                          "before they act (their own functions; a RayJob after Kueue's mutating webhook suspended it), and a RayJob's "
                          "submissionMode is one its controller submits in; else it never runs",
    "kueue-inadmissible": "every RayJob's Workload, as Kueue's Ray integration builds it, is accepted by the apiserver (the pinned "
                          "Workload CRD's schema, list keys and CEL rules, Kueue's Workload webhook: pod set names from the worker "
                          "groups' names, lowercased, distinct) and passes what the pinned Kueue's scheduler checks before it looks for "
                          "quota (its own workload.ValidateResources and ValidateLimitRange: requests within limits and within the "
                          "namespace's LimitRanges on the cluster); else the job is never admitted",
    "kueue-unaccounted-pods": "a queued RayJob's, RayCluster's or RayService's (its Kueue integration enabled) worker groups create no more "
                              "pods than Kueue charges to its ClusterQueue: the kind's Kueue integration charges replicas (times "
                              "numOfHosts; a replicas left out is the CRD's default 0), the pinned KubeRay's RayCluster controller creates "
                              "replicas raised to minReplicas (both their own code); else the pods beyond run outside every quota",
    "kueue-idle-quota": "(warning) a queued RayJob's, RayCluster's or RayService's worker groups are charged no more pods than KubeRay creates (replicas above "
                        "maxReplicas: KubeRay creates maxReplicas, Kueue charges replicas); else quota stays reserved and unused while "
                        "other jobs wait for it",
    "pod-validation": "every pod KubeRay would create for a RayJob, RayCluster or RayService (head, each worker group, a RayJob's submitter), built by "
                      "KubeRay's own pod builders, passes the pinned apiserver's pod validation, and a RayJob's submitter Job (its "
                      "submitterPodTemplate and submitterConfig) the apiserver's Job validation (tools/kubecheck); else Kueue admits the "
                      "job and its pods are refused, so it holds its quota without running",
    "pod-security": "every pod KubeRay would create for a sample or a Ray object a layer applies meets the PodSecurity level "
                    "its namespace enforces (label pod-security.kubernetes.io/enforce; the pinned apiserver's own policy checks, "
                    "tools/kubecheck); else Kueue admits the job and the apiserver forbids its pods",
    "resource-quota": "what KubeRay creates for a sample (its pods: head, every worker replica, the submitter; the RayCluster of a "
                      "RayJob or RayService, the head, headless and serve Services, the submitter Job) together fits each ResourceQuota "
                      "of its namespace on its cluster, and the pods carry every resource it tracks (the apiserver's quota evaluators, "
                      "tools/kubecheck); Kueue does not look at ResourceQuotas, so it admits the job and what is beyond the quota is forbidden",
}

HINTS = {
    "schema-unknown-kind": "fix apiVersion/kind (Kueue: kueue.x-k8s.io/v1beta2, KubeRay: ray.io/v1, Flux: kustomize.toolkit.fluxcd.io/v1); "
                           "for another operator's kind, name the files or directories of its CRDs under `crds:` in .ray-kueue-gate.yaml",
    "schema": "fix the field named in the message; unknown fields are errors (check spelling and nesting against the CRD)",
    "api-validation": "change the value at the field named so that the rule quoted in the message holds (the apiserver rejects the object)",
    "kueue-webhook": "change the value at the field named; Kueue's admission webhook rejects the object as it stands",
    "kuberay-validation": "change the Ray object as the message says; KubeRay's controller refuses it (a RayJob: jobDeploymentStatus "
                          "ValidationFailed; a RayCluster or RayService: an Invalid... event and no pods)",
    "pod-validation": "change the pod template at the field named as the message says (the Ray CRD's schema lets it through; "
                      "the apiserver refuses the pod KubeRay makes of it)",
    "resource-quota": "raise the namespace's ResourceQuota named (or drop the resource from its hard limits), or shrink the job; "
                      "set the requests and limits a quota tracks on every container",
    "pod-security": "set in the pod templates the securityContext the level asks for (the message lists each field), or run the "
                    "jobs in a namespace of a lower level (pod-security.kubernetes.io/enforce: baseline)",
    "kueue-unaccounted-pods": "set replicas to at least minReplicas (without the autoscaler, replicas = minReplicas = maxReplicas is "
                              "what Kueue charges and KubeRay creates)",
    "kueue-idle-quota": "set replicas to at most maxReplicas (without the autoscaler, replicas = minReplicas = maxReplicas); a "
                        "suspended worker group is charged all the same: remove it from a queued job",
    "kueue-inadmissible": "change the field named as the message says: a worker group's name must be a lowercase DNS label, "
                          "distinct from the others' whatever the case; a container's requests at most its limits (or drop the limits) "
                          "and within the min/max of its namespace's LimitRange (or change the LimitRange)",
}
WARNING_RULES = {"kueue-idle-quota"}  # the stages' rules whose findings are warnings
WHAT = {
    "schema-unknown-kind": "is not served by Kubernetes 1.35 or the pinned CRDs",
    "schema": "fails strict schema validation",
    "api-validation": "is rejected by the apiserver's validation",
    "kueue-webhook": "is rejected by Kueue's validating webhook",
    "kuberay-validation": "is refused by KubeRay's controller",
    "kueue-inadmissible": "would never be admitted",
    "kueue-unaccounted-pods": "once admitted, runs pods Kueue does not charge to the queue",
    "kueue-idle-quota": "once admitted, holds quota for pods KubeRay never creates",
    "pod-validation": "is accepted, but the apiserver refuses the pods KubeRay creates for it",
    "resource-quota": "would be admitted, but not all that KubeRay creates for it could be created",
    "pod-security": "would be admitted, but the apiserver's PodSecurity admission forbids its pods",
}

# Refusals of one rule whose own fix is narrower than the rule's hint: (rule, words of the refusal) -> that fix.
NARROWER_HINTS = {
    ("schema", "'sops'"): "the object is SOPS-encrypted: give the Flux Kustomization that applies it spec.decryption (provider: sops, "
                          "with the key's Secret), or drop its kustomize.toolkit.fluxcd.io/decrypt: disabled annotation",
    ("api-validation", "must be nil when cohort is empty"): "drop the borrowingLimit/lendingLimit, or put the ClusterQueue in a cohort "
                                                            "(spec.cohortName): limits bound what it borrows from or lends to one",
    ("kueue-inadmissible", "must not exceed its limits"): "lower the request named to at most its limit (or raise or drop the limit)",
    ("kueue-webhook", "should delete the cluster after finishing"): "add spec.shutdownAfterJobFinishes: true (unset, it is false): "
                                                                    "Kueue's RayJob webhook requires it, else the RayCluster keeps the queue's quota after the job",
    ("kueue-webhook", "cannot unmarshal number"): "write a number the field's Go type holds (an int32 is at most 2147483647): the "
                                                  "apiserver accepts a larger one, Kueue cannot decode it",
    ("kueue-inadmissible", "spec.podSets: Too many"): "use at most 6 worker groups with submissionMode K8sJobMode (the default), or "
                                                       "submissionMode HTTPMode or SidecarMode: a Workload has at most 8 pod sets (the head, "
                                                       "one per worker group and K8sJobMode's submitter), and Kueue's RayJob webhook, "
                                                       "counting only the head, lets 7 worker groups through",
    ("resource-quota", "is exceeded by what KubeRay creates"): "raise the namespace's ResourceQuota named on the resources the message "
                                                              "lists (or drop them from its hard limits): KubeRay creates these objects "
                                                              "for every job; a head Service of type LoadBalancer or NodePort: leave "
                                                              "headGroupSpec.serviceType out (ClusterIP; reach the dashboard with kubectl "
                                                              "port-forward); the submitter Job: submissionMode HTTPMode or SidecarMode "
                                                              "creates none",
    ("kueue-inadmissible", "LimitRange"): "bring the container's requests and limits within its namespace's LimitRange (or change the "
                                          "LimitRange)",
}


# Refusals of a rule that another part of the component makes than the rule's WHAT says, by the words of the message.
NARROWER_WHAT = {("kueue-webhook", "as its controllers read it"): "is accepted by the apiserver, but Kueue cannot read it"}


def what_for(rule: str, obj, message: str = "") -> str:
    """What the rule's refusal means for the object: a queued one whose pods are refused holds its quota once admitted."""
    narrower = next((what for (r, words), what in NARROWER_WHAT.items() if r == rule and words in message), None)
    return narrower or WHAT[rule] + (" (once Kueue admits it, it holds its quota while none of them runs)" if rule == "pod-validation" and queue_name(obj) else "")


def hint_for(rule: str, err: dict) -> str:
    """The rule's hint, or the narrower one the refusal's words call for."""
    return next((hint for (r, words), hint in NARROWER_HINTS.items() if r == rule and words in str(err.get("message"))), HINTS[rule])
