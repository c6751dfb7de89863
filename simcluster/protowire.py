"""Field numbers of the Kubernetes messages the endpoint reads as protobuf, in a compact notation.

These are facts of the wire format (the numbers fixed in the API's protobuf definitions) for
the objects client-go's typed clients send: kubectl's `create` generators, evictions, delete
options and access reviews. Only what those clients write is listed; `protobuf.py` rejects
non-zero fields it cannot name instead of dropping them.

Notation: one message per line (indented lines continue it), `name=number[:type][suffix]`:
  type      s (string, the default), b (bytes), i32, i64, bool, f64, Time, MicroTime,
            Quantity, IntOrString, ExtraValue, or a message of this table
  *         repeated             {}  map<string, type>
  !         zero values are kept (Go pointers and fields without `omitempty`)
  ...name   embedded: the message's fields appear inline in the JSON object
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TABLE = """
TypeMeta apiVersion=1 kind=2
ObjectMeta name=1 generateName=2 namespace=3 selfLink=4 uid=5 resourceVersion=6 generation=7:i64
  creationTimestamp=8:Time deletionTimestamp=9:Time deletionGracePeriodSeconds=10:i64! labels=11:s{}
  annotations=12:s{} ownerReferences=13:OwnerReference* finalizers=14:s*
OwnerReference kind=1 name=3 uid=4 apiVersion=5 controller=6:bool! blockOwnerDeletion=7:bool!
LabelSelector matchLabels=1:s{} matchExpressions=2:LabelSelectorRequirement*
LabelSelectorRequirement key=1 operator=2 values=3:s*
FieldSelectorRequirement key=1 operator=2 values=3:s*
ObjectReference kind=1 namespace=2 name=3 uid=4 apiVersion=5 resourceVersion=6 fieldPath=7
LocalObjectReference name=1
DeleteOptions gracePeriodSeconds=1:i64! preconditions=2:Preconditions orphanDependents=3:bool!
  propagationPolicy=4 dryRun=5:s* ignoreStoreReadErrorWithClusterBreakingPotential=6:bool!
Preconditions uid=1 resourceVersion=2

Namespace metadata=1:ObjectMeta spec=2:NamespaceSpec status=3:NamespaceStatus
NamespaceSpec finalizers=1:s*
NamespaceStatus phase=1
ConfigMap metadata=1:ObjectMeta data=2:s{} binaryData=3:b{} immutable=4:bool!
Secret metadata=1:ObjectMeta data=2:b{} type=3 stringData=4:s{} immutable=5:bool!
ServiceAccount metadata=1:ObjectMeta secrets=2:ObjectReference* imagePullSecrets=3:LocalObjectReference*
  automountServiceAccountToken=4:bool!
PriorityClass metadata=1:ObjectMeta value=2:i32! globalDefault=3:bool description=4 preemptionPolicy=5!
Binding metadata=1:ObjectMeta target=2:ObjectReference
Scale metadata=1:ObjectMeta spec=2:ScaleSpec status=3:Empty
ScaleSpec replicas=1:i32!
Empty

Service metadata=1:ObjectMeta spec=2:ServiceSpec status=3:Empty
ServiceSpec ports=1:ServicePort* selector=2:s{} clusterIP=3 type=4 externalIPs=5:s* sessionAffinity=7
  loadBalancerIP=8 loadBalancerSourceRanges=9:s* externalName=10 externalTrafficPolicy=11
  healthCheckNodePort=12:i32 publishNotReadyAddresses=13:bool ipFamilyPolicy=17! clusterIPs=18:s*
  ipFamilies=19:s* allocateLoadBalancerNodePorts=20:bool! loadBalancerClass=21! internalTrafficPolicy=22!
  trafficDistribution=23!
ServicePort name=1 protocol=2 port=3:i32! targetPort=4:IntOrString nodePort=5:i32 appProtocol=6!

Deployment metadata=1:ObjectMeta spec=2:DeploymentSpec status=3:Empty
DeploymentSpec replicas=1:i32! selector=2:LabelSelector template=3:PodTemplateSpec
  strategy=4:DeploymentStrategy minReadySeconds=5:i32 revisionHistoryLimit=6:i32! paused=7:bool
  progressDeadlineSeconds=9:i32!
DeploymentStrategy type=1 rollingUpdate=2:RollingUpdateDeployment
RollingUpdateDeployment maxUnavailable=1:IntOrString maxSurge=2:IntOrString
Job metadata=1:ObjectMeta spec=2:JobSpec status=3:Empty
JobSpec parallelism=1:i32! completions=2:i32! activeDeadlineSeconds=3:i64! selector=4:LabelSelector
  manualSelector=5:bool! template=6:PodTemplateSpec backoffLimit=7:i32! ttlSecondsAfterFinished=8:i32!
  completionMode=9! suspend=10:bool! backoffLimitPerIndex=12:i32! maxFailedIndexes=13:i32!
  podReplacementPolicy=14! managedBy=15!
PodDisruptionBudget metadata=1:ObjectMeta spec=2:PodDisruptionBudgetSpec status=3:Empty
PodDisruptionBudgetSpec minAvailable=1:IntOrString selector=2:LabelSelector maxUnavailable=3:IntOrString
  unhealthyPodEvictionPolicy=4!
Eviction metadata=1:ObjectMeta deleteOptions=2:DeleteOptions

Pod metadata=1:ObjectMeta spec=2:PodSpec status=3:Empty
PodTemplateSpec metadata=1:ObjectMeta spec=2:PodSpec
PodSpec volumes=1:Volume* containers=2:Container* restartPolicy=3 terminationGracePeriodSeconds=4:i64!
  activeDeadlineSeconds=5:i64! dnsPolicy=6 nodeSelector=7:s{} serviceAccountName=8 serviceAccount=9
  nodeName=10 hostNetwork=11:bool hostPID=12:bool hostIPC=13:bool securityContext=14:PodSecurityContext
  imagePullSecrets=15:LocalObjectReference* hostname=16 subdomain=17 affinity=18:Affinity
  schedulerName=19 initContainers=20:Container* automountServiceAccountToken=21:bool!
  tolerations=22:Toleration* hostAliases=23:HostAlias* priorityClassName=24 priority=25:i32!
  shareProcessNamespace=27:bool! readinessGates=28:PodReadinessGate* runtimeClassName=29!
  enableServiceLinks=30:bool! preemptionPolicy=31! overhead=32:Quantity{}
  topologySpreadConstraints=33:TopologySpreadConstraint* setHostnameAsFQDN=35:bool! os=36:PodOS
  hostUsers=37:bool! schedulingGates=38:PodSchedulingGate* resourceClaims=39:PodResourceClaim*
  resources=40:ResourceRequirements hostnameOverride=41!
Container name=1! image=2 command=3:s* args=4:s* workingDir=5 ports=6:ContainerPort* env=7:EnvVar*
  resources=8:ResourceRequirements volumeMounts=9:VolumeMount* terminationMessagePath=13
  imagePullPolicy=14 securityContext=15:SecurityContext stdin=16:bool stdinOnce=17:bool tty=18:bool
  envFrom=19:EnvFromSource* terminationMessagePolicy=20 resizePolicy=23:ContainerResizePolicy*
  restartPolicy=24!
ContainerPort name=1 hostPort=2:i32 containerPort=3:i32! protocol=4 hostIP=5
EnvVar name=1! value=2 valueFrom=3:EnvVarSource
EnvVarSource fieldRef=1:ObjectFieldSelector resourceFieldRef=2:ResourceFieldSelector
  configMapKeyRef=3:KeySelector secretKeyRef=4:KeySelector
ObjectFieldSelector apiVersion=1 fieldPath=2
ResourceFieldSelector containerName=1 resource=2 divisor=3:Quantity
KeySelector ...localObjectReference=1:LocalObjectReference key=2 optional=3:bool!
EnvFromSource prefix=1 configMapRef=2:EnvSource secretRef=3:EnvSource
EnvSource ...localObjectReference=1:LocalObjectReference optional=2:bool!
ResourceRequirements limits=1:Quantity{} requests=2:Quantity{} claims=3:ContainerResourceClaim*
ContainerResourceClaim name=1 request=2
ContainerResizePolicy resourceName=1 restartPolicy=2
VolumeMount name=1 readOnly=2:bool mountPath=3 subPath=4 mountPropagation=5! subPathExpr=6
  recursiveReadOnly=7!
Volume name=1! ...volumeSource=2:VolumeSource
VolumeSource hostPath=1:HostPathVolumeSource emptyDir=2:EmptyDirVolumeSource secret=6:SecretVolumeSource
  persistentVolumeClaim=10:PVCVolumeSource configMap=19:ConfigMapVolumeSource
HostPathVolumeSource path=1 type=2!
EmptyDirVolumeSource medium=1 sizeLimit=2:Quantity
SecretVolumeSource secretName=1 items=2:KeyToPath* defaultMode=3:i32! optional=4:bool!
ConfigMapVolumeSource ...localObjectReference=1:LocalObjectReference items=2:KeyToPath*
  defaultMode=3:i32! optional=4:bool!
PVCVolumeSource claimName=1 readOnly=2:bool
KeyToPath key=1 path=2 mode=3:i32!
PodSecurityContext runAsUser=2:i64! runAsNonRoot=3:bool! supplementalGroups=4:i64* fsGroup=5:i64!
  runAsGroup=6:i64! sysctls=7:Sysctl* fsGroupChangePolicy=9! seccompProfile=10:SeccompProfile
SecurityContext capabilities=1:Capabilities privileged=2:bool! runAsUser=4:i64! runAsNonRoot=5:bool!
  readOnlyRootFilesystem=6:bool! allowPrivilegeEscalation=7:bool! runAsGroup=8:i64! procMount=9!
  seccompProfile=11:SeccompProfile
Capabilities add=1:s* drop=2:s*
SeccompProfile type=1 localhostProfile=2!
Sysctl name=1 value=2
Toleration key=1 operator=2 value=3 effect=4 tolerationSeconds=5:i64!
HostAlias ip=1 hostnames=2:s*
PodReadinessGate conditionType=1
PodOS name=1
PodSchedulingGate name=1
PodResourceClaim name=1 resourceClaimName=3! resourceClaimTemplateName=4!
TopologySpreadConstraint maxSkew=1:i32! topologyKey=2 whenUnsatisfiable=3 labelSelector=4:LabelSelector
  minDomains=5:i32! nodeAffinityPolicy=6! nodeTaintsPolicy=7! matchLabelKeys=8:s*
Affinity nodeAffinity=1:NodeAffinity podAffinity=2:PodAffinity podAntiAffinity=3:PodAffinity
NodeAffinity requiredDuringSchedulingIgnoredDuringExecution=1:NodeSelector
  preferredDuringSchedulingIgnoredDuringExecution=2:PreferredSchedulingTerm*
NodeSelector nodeSelectorTerms=1:NodeSelectorTerm*
NodeSelectorTerm matchExpressions=1:NodeSelectorRequirement* matchFields=2:NodeSelectorRequirement*
NodeSelectorRequirement key=1 operator=2 values=3:s*
PreferredSchedulingTerm weight=1:i32! preference=2:NodeSelectorTerm
PodAffinity requiredDuringSchedulingIgnoredDuringExecution=1:PodAffinityTerm*
  preferredDuringSchedulingIgnoredDuringExecution=2:WeightedPodAffinityTerm*
PodAffinityTerm labelSelector=1:LabelSelector namespaces=2:s* topologyKey=3 namespaceSelector=4:LabelSelector
  matchLabelKeys=5:s* mismatchLabelKeys=6:s*
WeightedPodAffinityTerm weight=1:i32! podAffinityTerm=2:PodAffinityTerm

SelfSubjectAccessReview metadata=1:ObjectMeta spec=2:AccessReviewSpec status=3:Empty
SubjectAccessReview metadata=1:ObjectMeta spec=2:AccessReviewSpec status=3:Empty
LocalSubjectAccessReview metadata=1:ObjectMeta spec=2:AccessReviewSpec status=3:Empty
AccessReviewSpec resourceAttributes=1:ResourceAttributes nonResourceAttributes=2:NonResourceAttributes
  user=3 groups=4:s* extra=5:ExtraValue{} uid=6
ResourceAttributes namespace=1 verb=2 group=3 version=4 resource=5 subresource=6 name=7
  fieldSelector=8:SelectorAttributes labelSelector=9:LabelSelectorAttributes
SelectorAttributes rawSelector=1 requirements=2:FieldSelectorRequirement*
LabelSelectorAttributes rawSelector=1 requirements=2:LabelSelectorRequirement*
NonResourceAttributes path=1 verb=2
SelfSubjectRulesReview metadata=1:ObjectMeta spec=2:RulesReviewSpec status=3:Empty
RulesReviewSpec namespace=1
TokenReview metadata=1:ObjectMeta spec=2:TokenReviewSpec status=3:Empty
TokenReviewSpec token=1 audiences=2:s*
SelfSubjectReview metadata=1:ObjectMeta status=2:Empty
"""

# kind in the envelope's TypeMeta -> the message its `raw` bytes hold
ROOTS: dict[str, str] = {
    kind: kind
    for kind in (
        "Namespace",
        "ConfigMap",
        "Secret",
        "ServiceAccount",
        "PriorityClass",
        "Binding",
        "Scale",
        "Service",
        "Deployment",
        "Job",
        "PodDisruptionBudget",
        "Eviction",
        "Pod",
        "DeleteOptions",
        "SelfSubjectAccessReview",
        "SubjectAccessReview",
        "LocalSubjectAccessReview",
        "SelfSubjectReview",
        "SelfSubjectRulesReview",
        "TokenReview",
    )
}


@dataclass(slots=True, frozen=True)
class Field:
    name: str
    type: str
    repeated: bool = False
    map: bool = False
    keep: bool = False
    inline: bool = False


_FIELD = re.compile(r"^(\.\.\.)?(\w+)=(\d+)(?::(\w+))?(\*|\{\})?(!)?$")


def _parse(table: str) -> dict[str, dict[int, Field]]:
    lines: list[str] = []
    for line in table.splitlines():
        if not line.strip():
            continue
        if line.startswith(" "):
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    messages: dict[str, dict[int, Field]] = {}
    for line in lines:
        name, *specs = line.split()
        entries: dict[int, Field] = {}
        for spec in specs:
            m = _FIELD.match(spec)
            if m is None:
                raise ValueError(f"bad field {spec!r} in message {name}")
            inline, field, number, kind, suffix, keep = m.groups()
            entries[int(number)] = Field(
                field, kind or "s", suffix == "*", suffix == "{}", keep is not None, inline is not None
            )
        messages[name] = entries
    return messages


MESSAGES = _parse(_TABLE)
