//! Table printer of certificates.k8s.io/v1 CertificateSigningRequests: `NAME AGE SIGNERNAME
//! REQUESTOR REQUESTEDDURATION CONDITION`, the condition summarised as kube prints it
//! (`Pending`, `Approved,Issued`, `Denied`, `Approved,Failed`).

use flotilla_apimachinery::TablePrinter;
use flotilla_apimachinery::duration::human_duration;
use serde_json::Value;

use crate::cells::*;

pub(crate) fn certificate_signing_requests() -> TablePrinter {
    let columns = vec![
        name_col(),
        age_col(),
        col(
            "SignerName",
            "string",
            0,
            "The signer the request is addressed to.",
        ),
        col("Requestor", "string", 0, "Who created the request."),
        col(
            "RequestedDuration",
            "string",
            0,
            "The validity the requester asked for.",
        ),
        col(
            "Condition",
            "string",
            0,
            "Approval state, and whether a certificate was issued or signing failed.",
        ),
    ];
    printer(columns, |obj, now| {
        let requested = match obj
            .pointer("/spec/expirationSeconds")
            .and_then(Value::as_i64)
        {
            Some(s) => human_duration(chrono::Duration::seconds(s)),
            None => NONE.to_string(),
        };
        vec![
            name_cell(obj),
            age_cell(obj, now),
            string_or(obj, "/spec/signerName", NONE).into(),
            string_at(obj, "/spec/username").into(),
            requested.into(),
            condition_summary(obj).into(),
        ]
    })
}

/// Denied wins over Approved, neither is Pending; then `,Failed` and `,Issued` as they apply.
fn condition_summary(obj: &Value) -> String {
    let has = |t: &str| {
        list_at(obj, "/status/conditions")
            .iter()
            .any(|c| str_at(c, "/type") == Some(t))
    };
    let mut out = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        out.push_str(",Failed");
    }
    if str_at(obj, "/status/certificate").is_some_and(|c| !c.is_empty()) {
        out.push_str(",Issued");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests_support::{column_names, row};
    use serde_json::json;

    #[test]
    fn csr_columns_and_conditions() {
        let p = certificate_signing_requests();
        assert_eq!(
            column_names(&p),
            "Name Age SignerName Requestor RequestedDuration Condition"
        );
        let pending = json!({
            "metadata": {"name": "agent-1", "creationTimestamp": "2024-05-01T11:59:15Z"},
            "spec": {"signerName": "kubernetes.io/kube-apiserver-client", "username": "admin",
                     "expirationSeconds": 86400, "usages": ["client auth"]}
        });
        assert_eq!(
            row(&p, &pending),
            json!([
                "agent-1",
                "45s",
                "kubernetes.io/kube-apiserver-client",
                "admin",
                "24h",
                "Pending"
            ])
        );
        let issued = json!({
            "metadata": {"name": "a"},
            "spec": {"username": "u"},
            "status": {"certificate": "LS0t", "conditions": [{"type": "Approved", "status": "True"}]}
        });
        assert_eq!(
            row(&p, &issued),
            json!(["a", "<unknown>", "<none>", "u", "<none>", "Approved,Issued"])
        );
        let failed = json!({"metadata": {"name": "f"}, "status": {"conditions": [
            {"type": "Approved", "status": "True"}, {"type": "Failed", "status": "True"}]}});
        assert_eq!(row(&p, &failed)[5], "Approved,Failed");
        let denied = json!({"metadata": {"name": "d"}, "status": {"conditions": [
            {"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]}});
        assert_eq!(row(&p, &denied)[5], "Denied");
    }
}
