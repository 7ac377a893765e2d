"""Offline schema check of Kubernetes manifests against the API types of the kubernetes Python client (the project
venv's, tests/requirements.txt; it was Debian's python3-kubernetes 22.6.0 before).

No cluster and no network: `kubectl apply/create --dry-run=client` (Debian's kubernetes-client 1.20) still asks an
API server for its discovery and OpenAPI documents, and `kubectl set ... --local`, which decodes offline, silently
drops unknown fields (docs/operations.md, "Multi-node", says what was tried). The client package carries one model
class per API type, generated from Kubernetes' OpenAPI document, with every field's JSON name (attribute_map) and type (openapi_types); its constructors refuse a missing
required field. problems() walks a manifest through them:
  - the kind must be a known (apiVersion, kind);
  - every field must exist in its type (a misspelt readOnlyRootFileSystem is an error, not silently ignored);
  - every value must have its field's type (str, int, bool, list, map, object), quantities must parse;
  - required fields must be present (the model's own validation; for the pydantic models of later clients, their
    fields marked required).
"""

import kubernetes.client as k8s
from kubernetes.utils import parse_quantity

KINDS = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Service"): "V1Service",
    ("apps/v1", "DaemonSet"): "V1DaemonSet",
    ("batch/v1", "Job"): "V1Job",
}

# Fields whose Go type is resource.Quantity: the Python client types them as str, the API also takes a number.
QUANTITY_MAPS = {("V1ResourceRequirements", "limits"), ("V1ResourceRequirements", "requests")}
QUANTITY_FIELDS = {("V1EmptyDirVolumeSource", "size_limit")}

PRIMITIVES = {
    "str": (str,),
    "int": (int,),
    "bool": (bool,),
    "float": (int, float),
    "datetime": (str,),
    "date": (str,),
}


def problems(doc):
    """Every schema problem of one manifest (a dict from YAML), as 'path: what' strings; [] if none."""
    out = []
    if not isinstance(doc, dict):
        return [f"a manifest must be a mapping, not {type(doc).__name__}"]
    model = KINDS.get((doc.get("apiVersion"), doc.get("kind")))
    if model is None:
        return [f"unknown apiVersion/kind {doc.get('apiVersion')}/{doc.get('kind')} (known: {sorted(KINDS)})"]
    _check(doc, model, doc["kind"], out)
    return out


def _quantity(value, path, out):
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        out.append(f"{path}: a quantity must be a string or a number, not {type(value).__name__}")
        return
    try:
        parse_quantity(value)
    except ValueError as e:
        out.append(f"{path}: {value!r} is not a Kubernetes quantity ({e})")


def _check(value, type_name, path, out):
    if type_name in PRIMITIVES:
        ok = isinstance(value, PRIMITIVES[type_name]) and not (type_name != "bool" and isinstance(value, bool))
        if not ok:
            out.append(f"{path}: expected {type_name}, got {type(value).__name__} {value!r}")
        return
    if type_name == "object":  # IntOrString, RawExtension: anything
        return
    # Container types as the generator spells them: "list[T]" and "dict(str, T)" (clients up to 2x), "List[T]" and
    # "Dict[str, T]" (later ones).
    if type_name.startswith(("list[", "List[")):
        if not isinstance(value, list):
            out.append(f"{path}: expected a list, got {type(value).__name__}")
            return
        for i, item in enumerate(value):
            _check(item, type_name[5:-1], f"{path}[{i}]", out)
        return
    if type_name.startswith(("dict(", "Dict[")):
        if not isinstance(value, dict):
            out.append(f"{path}: expected a map, got {type(value).__name__}")
            return
        inner = type_name[len("dict("):-1].split(", ", 1)[1]
        for key, item in value.items():
            if not isinstance(key, str):
                out.append(f"{path}: map keys must be strings, got {key!r}")
            _check(item, inner, f"{path}.{key}", out)
        return
    cls = getattr(k8s, type_name)
    if not isinstance(value, dict):
        out.append(f"{path}: expected a {type_name} mapping, got {type(value).__name__}")
        return
    by_json = {json: attr for attr, json in cls.attribute_map.items()}
    present = {}
    for key, item in value.items():
        attr = by_json.get(key)
        if attr is None:
            out.append(f"{path}.{key}: no such field in {type_name} (fields: {', '.join(sorted(by_json))})")
            continue
        present[attr] = item
        field_type = cls.openapi_types[attr]
        if (type_name, attr) in QUANTITY_MAPS and isinstance(item, dict):
            for name, q in item.items():
                _quantity(q, f"{path}.{key}.{name}", out)
        elif (type_name, attr) in QUANTITY_FIELDS:
            _quantity(item, f"{path}.{key}", out)
        else:
            _check(item, field_type, f"{path}.{key}", out)
    if hasattr(cls, "model_fields"):  # a pydantic model (later clients): its required fields; the types are checked
        missing = [cls.attribute_map.get(n, n) for n, f in cls.model_fields.items()  # above, field by field
                   if f.is_required() and n not in present]
        if missing:
            out.append(f"{path}: {type_name} is missing its required field(s) {', '.join(missing)}")
        return
    try:
        cls(**present)  # the model's own validation: required fields (and some enums)
    except (ValueError, TypeError) as e:
        out.append(f"{path}: {e}")
