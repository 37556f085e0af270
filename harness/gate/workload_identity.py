"""The workload identity Terraform sets up against the manifests: the federated identity credential trusts
system:serviceaccount:<ns>:<name> of the workload ServiceAccount (the one with the workload identity annotation, found
among the repository's sources wherever it is written), the AKS cluster has the OIDC issuer and the workload identity
webhook, and every other annotated ServiceAccount is trusted too (rules in harness.gate.terraform_checks.RULES)."""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from harness.gate.findings import Finding
from harness.gate.sources import Sources, as_map
from harness.gate.terraform import TERRAFORM_DIR, Evaluation, TerraformConfig, TerraformError, variable_origin

CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"
# The webhook's other annotations (azure-workload-identity's docs, "Annotations"): never a misspelt client-id.
OTHER_ANNOTATIONS = {f"azure.workload.identity/{k}" for k in ("tenant-id", "service-account-token-expiration", "skip-containers",
                                                               "inject-proxy-sidecar", "proxy-sidecar-port")}
TOKEN_AUDIENCE = "api://AzureADTokenExchange"
SUBJECT_VARIABLES = ("workload_namespace", "workload_service_account_name")  # what local.workload_subject is built from


@dataclass(frozen=True)
class WorkloadAccount:
    """The workload ServiceAccount: namespace, name and the file and line that define it."""
    namespace: str
    name: str
    file: str
    line: int | None
    namespaced: bool = True  # its namespace is written (else "default" stands for the one a kustomization may set)

    def __iter__(self):  # (namespace, name), as the subject names them
        return iter((self.namespace, self.name))

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


def annotated_accounts(sources: Sources) -> list[WorkloadAccount]:
    """The ServiceAccounts of the repository's sources with the workload identity annotation (a fixed name, not ${VAR})."""
    out = []
    for doc in sources.docs:
        meta = as_map(doc.obj.get("metadata"))
        ns, name = meta.get("namespace", "default"), meta.get("name")
        if doc.obj.get("kind") == "ServiceAccount" and CLIENT_ID_ANNOTATION in as_map(meta.get("annotations")) and \
                isinstance(ns, str) and isinstance(name, str) and "${" not in ns + name:
            out.append(WorkloadAccount(ns, name, doc.file, doc.line, "namespace" in meta))
    return out


def _workload_service_account(sources: Sources, scopes: list[tuple[str, Evaluation]], clusters: str) -> WorkloadAccount | None:
    """The workload ServiceAccount, wherever the repository keeps it: of the annotated ServiceAccounts, the one a federated
    credential trusts with the variable defaults, else the first outside the clusters' directories (a shared layer), else
    the first."""
    found = annotated_accounts(sources)
    trusted = [a for a in found if _trusted(scopes[0][1], f"system:serviceaccount:{a.namespace}:{a.name}")]
    shared = [a for a in found if not a.file.startswith(clusters + "/")]
    return next(iter(trusted or shared or found), None)


def identity_findings(cfg: TerraformConfig, scopes: list[tuple[str, Evaluation]], sources: Sources, clusters: str) -> list[Finding]:
    """terraform-federated-subject and terraform-workload-identity (`scopes`: the variable defaults, then each cluster's tfvars)."""
    out = []
    sa = _workload_service_account(sources, scopes, clusters)
    creds = cfg.of_type("azurerm_federated_identity_credential")
    if sa is None and (misnamed := _unannotated_account(sources, scopes)):
        out.append(misnamed[1])
        sa = misnamed[0]  # the credential's ServiceAccount, still there: the rest is judged against it
    if sa is None:
        at = (creds[0].file, creds[0].line, creds[0].address) if creds else (f"{TERRAFORM_DIR}/identity.tf", None, "")
        wanted = "/".join(str(scopes[0][1].variable(v) or "?") for v in SUBJECT_VARIABLES)
        return [Finding(*at, "terraform-federated-subject",
                        f"no ServiceAccount of the repository has annotation {CLIENT_ID_ANNOTATION}: the federated credential trusts a "
                        "workload identity no pod can use",
                        f"restore the workload ServiceAccount {wanted} with annotation {CLIENT_ID_ANNOTATION} in the layer every cluster applies",
                        absent=(f"ServiceAccount/{wanted}",))]  # (folding: the object-ref findings of its absence go under it)
    expected = f"system:serviceaccount:{sa.namespace}:{sa.name}"
    off: set[tuple] = set()  # (cluster, setting): reported once, with the first variable set that shows it
    mismatched: dict[tuple, list[str]] = {}  # (file, line, credential, subject, fix) -> the variable sets that give it
    for label, ev in scopes:  # the cluster's OIDC issuer and the workload identity webhook, which the identity needs
        for aks in ev.of_type("azurerm_kubernetes_cluster"):
            for attr in ("oidc_issuer_enabled", "workload_identity_enabled"):
                v = aks.body.get(attr)
                if (v is None or (v.known and v.value is not True)) and (aks.address, attr) not in off:
                    off.add((aks.address, attr))
                    out.append(Finding(v.file if v else aks.file, v.line if v else aks.line, aks.address, "terraform-workload-identity",
                                       f"{aks.address} {attr} is {v.text if v else 'not set (false)'} ({label}), but pods of {sa.namespace}/{sa.name} use "
                                       f"workload identity: {'the federated credential has no issuer' if attr.startswith('oidc') else 'no token is injected'}"
                                       ", so their Azure calls fail", f"set {attr} = true"))
    if not creds:
        return [Finding(f"{TERRAFORM_DIR}/identity.tf", None, "", "terraform-federated-subject",
                        f"no azurerm_federated_identity_credential: pods of {sa.namespace}/{sa.name} get no Azure token",
                        f'add one with subject = "{expected}" and issuer = the cluster\'s oidc_issuer_url')]
    for cred in creds:
        where = f"{cred.address}"
        if "subject" not in cred.body:
            out.append(Finding(cred.file, cred.line, where, "terraform-federated-subject",
                               f"{where} has no subject; it must trust {expected} (the ServiceAccount at {sa.where()})",
                               f'set subject = "{expected}" (local.workload_subject)'))
            continue
        audience = cred.body.get("audience")
        if audience is None or audience.value != [TOKEN_AUDIENCE]:
            out.append(Finding(audience.file if audience else cred.file, audience.line if audience else cred.line, where, "terraform-federated-subject",
                               f"{where} audience is {audience.text if audience else None!r}, not [{TOKEN_AUDIENCE!r}]: the workload identity webhook's tokens would be refused",
                               f'set audience = ["{TOKEN_AUDIENCE}"]'))
        out += _issuer_findings(cfg, cred)
        for label, ev in scopes:
            block = ev.instance(cred.address)
            subject = block.body.get("subject") if block else None
            if subject is None or subject.error:
                continue  # terraform-expression reports it
            try:
                value = subject.get(f"{where} subject")
            except TerraformError as err:
                out.append(Finding(subject.file, subject.line, where, "terraform-federated-subject", f"{err} ({label})",
                                   "build the subject from var.workload_namespace and var.workload_service_account_name"))
                break
            if value != expected and not _trusted(ev, expected):  # (another credential may trust another ServiceAccount)
                # At the value that differs: the tfvars or default line of the variable the subject is built from, else the subject's line.
                parts = str(value).removeprefix("system:serviceaccount:").split(":") if str(value).startswith("system:serviceaccount:") else []
                wrong = [(var, want) for var, want, got in zip(SUBJECT_VARIABLES, sa, parts) if got != want and ev.variable(var) == got]
                at = variable_origin(cfg, wrong[0][0], None if label == "variable defaults" else label)[:2] if wrong else (subject.file, subject.line)
                fix = f'set {wrong[0][0]} = "{wrong[0][1]}"' if wrong else f'build the subject as "{expected}" from var.{" and var.".join(SUBJECT_VARIABLES)}'
                mismatched.setdefault((*at, where, value, fix), []).append(label)
    for (file, line, where, value, fix), labels in mismatched.items():  # one cause, once: at its line, with every variable set that shows it
        out.append(Finding(file, line, where, "terraform-federated-subject",
                           f"{where} subject is {value!r} with {' | '.join(labels)}, but the workload ServiceAccount at {sa.where()} is "
                           f"{sa.namespace}/{sa.name} ({expected}): Azure would refuse its token exchange",
                           f"{fix} (the workload ServiceAccount at {sa.where()}), or name the ServiceAccount as Terraform does"))
    return out


def _issuer_findings(cfg: TerraformConfig, cred) -> list[Finding]:
    """The credential's issuer must be the OIDC issuer of the cluster Terraform creates (its oidc_issuer_url, read from the
    resource or a data source): the webhook's tokens are signed by that issuer, and Entra ID matches the URL exactly."""
    clusters = cfg.of_type("azurerm_kubernetes_cluster")
    issuer = cred.body.get("issuer")
    if not clusters or (issuer is not None and (issuer.error or any(
            r.removeprefix("data.").startswith("azurerm_kubernetes_cluster.") and r.endswith(".oidc_issuer_url") for r in issuer.reads))):
        return []  # a cluster made elsewhere; terraform-expression reports an issuer that does not evaluate
    want = f"{clusters[0].address}.oidc_issuer_url"
    return [Finding(issuer.file if issuer else cred.file, issuer.line if issuer else cred.line, cred.address, "terraform-federated-subject",
                    f"{cred.address} issuer is {issuer.text if issuer else 'not set'}, not the OIDC issuer of the cluster Terraform creates "
                    f"({want}): the tokens the workload identity webhook projects are signed by that issuer, and Entra ID exchanges them "
                    "only with a credential of exactly that issuer URL (AADSTS70021: No matching federated identity record found)",
                    f"set issuer = {want}")]


def _unannotated_account(sources: Sources, scopes: list[tuple[str, Evaluation]]) -> tuple[WorkloadAccount, Finding] | None:
    """When no ServiceAccount has the annotation: a ServiceAccount whose subject a federated credential trusts (with some
    variable set), else the one ServiceAccount with an annotation key close to it, and the finding at its annotation key
    (a misspelt key: did you mean) or its metadata: the webhook reads only CLIENT_ID_ANNOTATION, so it injects no
    AZURE_CLIENT_ID into its pods, and Terraform is not what to change."""
    accounts = [(doc, as_map(doc.obj.get("metadata"))) for doc in sources.docs if doc.obj.get("kind") == "ServiceAccount"]
    accounts = [(doc, meta) for doc, meta in accounts if isinstance(meta.get("name"), str) and isinstance(meta.get("namespace", "default"), str)]
    near = {id(doc): difflib.get_close_matches(CLIENT_ID_ANNOTATION, [str(k) for k in as_map(meta.get("annotations"))
                                                                           if str(k) not in OTHER_ANNOTATIONS], n=1, cutoff=0.8)
            for doc, meta in accounts}
    trusted = [(doc, meta) for doc, meta in accounts
               if any(_trusted(ev, f"system:serviceaccount:{meta.get('namespace', 'default')}:{meta['name']}") for _, ev in scopes)]
    found = trusted or [(doc, meta) for doc, meta in accounts if near[id(doc)]]
    if len(found) != 1 and not trusted:
        return None
    doc, meta = found[0]
    ns, name, key = meta.get("namespace", "default"), meta["name"], (near[id(doc)] or [None])[0]
    account = WorkloadAccount(ns, name, doc.file, doc.line, "namespace" in meta)
    file, line = sources.locate(doc.obj, field=f"metadata.annotations[{key}]" if key else "metadata")
    said = (f"has annotation key {key!r}, not {CLIENT_ID_ANNOTATION} (did you mean {CLIENT_ID_ANNOTATION}?)" if key else
            f"has no annotation {CLIENT_ID_ANNOTATION}")
    trust = ("the federated identity credential trusts its subject" if trusted else "it is the only ServiceAccount with a key like it")
    return account, Finding(file, line if line else doc.line, f"ServiceAccount/{ns}/{name}", "terraform-federated-subject",
                            f"ServiceAccount {ns}/{name} {said}; {trust}, but the workload identity webhook reads only "
                            f"{CLIENT_ID_ANNOTATION}, so it injects no AZURE_CLIENT_ID into its pods and their Azure calls fail",
                            f"write the annotation key as {CLIENT_ID_ANNOTATION}" if key else
                            f'add annotation {CLIENT_ID_ANNOTATION}: "<the client id of the managed identity Terraform creates>"')


def _trusted(ev: Evaluation, subject: str) -> bool | None:
    """Whether a federated identity credential of `ev` trusts `subject`; None when one's subject is known only at apply."""
    values = [c.body.get("subject") for c in ev.of_type("azurerm_federated_identity_credential")]
    if any(v is not None and not v.error and v.known and v.value == subject for v in values):
        return True
    return None if any(v is None or v.error or not v.known for v in values) else False


def untrusted_accounts(cfg: TerraformConfig, scopes: list[tuple[str, Evaluation]], sources: Sources, clusters: str,
                       rendered: list) -> list[Finding]:
    """Another ServiceAccount with the workload identity annotation (a team's copy in its own namespace) that a cluster
    applies (`rendered`: the ClusterRenders) whose subject no federated identity credential trusts with some variable set:
    Azure refuses its pods' token exchange. Its namespace is the rendered one (a kustomization's `namespace:` sets it), and
    the finding is at its source document."""
    first = _workload_service_account(sources, scopes, clusters)
    if first is None or not cfg.of_type("azurerm_federated_identity_credential"):
        return []  # identity_findings reports the missing account or credential
    out, seen = [], {tuple(first)}
    for _, obj in (pair for cluster in rendered for pair in cluster.applied()):
        meta = as_map(obj.get("metadata"))
        ns, name = meta.get("namespace", "default"), meta.get("name")
        if obj.get("kind") != "ServiceAccount" or CLIENT_ID_ANNOTATION not in as_map(meta.get("annotations")) or \
                not isinstance(ns, str) or not isinstance(name, str) or "${" in ns + name or (ns, name) in seen:
            continue
        seen.add((ns, name))
        if sources.locate(obj) == (first.file, first.line):
            continue  # the workload account itself, moved by a layer (flux-target-namespace reports that, once)
        subject = f"system:serviceaccount:{ns}:{name}"
        refused = [label for label, ev in scopes if _trusted(ev, subject) is False]
        if refused:
            file, line = sources.locate(obj)
            out.append(Finding(file, line, f"ServiceAccount/{ns}/{name}", "terraform-federated-subject",
                               f"ServiceAccount {ns}/{name} has annotation {CLIENT_ID_ANNOTATION}, but no azurerm_federated_identity_credential "
                               f"trusts {subject} ({' | '.join(refused)}): Azure refuses its pods' token exchange",
                               f'add an azurerm_federated_identity_credential with subject = "{subject}" to {TERRAFORM_DIR}/identity.tf, or '
                               f"run the jobs as {first.namespace}/{first.name}"))
    return out
