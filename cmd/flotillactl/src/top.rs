//! `flotillactl top clusters`: each member's capacity in use and free, from its Cluster's
//! `status.resourceSummary` as the cluster status controller last wrote it (no metrics
//! server: requests, not live usage). In use is what pods bound to a node request
//! (`allocated`), as `kubectl describe node` counts them; pods waiting for a node
//! (`allocating`) use nothing yet, however much they ask for. Free is `allocatable` minus
//! what is in use (never below 0). Columns and units follow `kubectl top nodes`:
//! CPU in millicores, memory in Mi, percentages of allocatable rounded down.

use std::collections::BTreeMap;

use anyhow::{Context, anyhow, bail};
use clap::{Args, Subcommand};
use flotilla_apimachinery::quantity::Round;
use flotilla_pod_resources::{ResourceName, Resources};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::ListParams;
use serde_json::Value;

#[derive(Subcommand, Debug)]
pub(crate) enum TopCommand {
    /// Capacity in use and free per member cluster, from its Cluster's status.resourceSummary.
    #[command(
        visible_alias = "cluster",
        after_help = "Examples:
  # Every member cluster's CPU, memory and pods in use and free
  flotillactl top clusters

  # Only member1 and member2
  flotillactl top clusters member1 member2

  # The clusters labelled region=eu, without the header line
  flotillactl top clusters -l region=eu --no-headers"
    )]
    Clusters(TopClustersArgs),
}

#[derive(Args, Debug)]
pub(crate) struct TopClustersArgs {
    /// Clusters to show (default: all).
    names: Vec<String>,
    /// Label selector of the clusters to show (e.g. region=eu,env!=test).
    #[arg(short = 'l', long)]
    selector: Option<String>,
    /// Print no header line.
    #[arg(long)]
    no_headers: bool,
}

const HEADERS: [&str; 10] = [
    "NAME",
    "CPU(cores)",
    "CPU(%)",
    "CPU-FREE",
    "MEMORY(bytes)",
    "MEMORY(%)",
    "MEMORY-FREE",
    "PODS",
    "PODS(%)",
    "PODS-FREE",
];

/// What kubectl top prints for figures it does not have.
const UNKNOWN: &str = "<unknown>";

/// One resource's figures in its integer unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Usage {
    used: i64,
    free: i64,
    percent: Option<i64>,
}

fn usage(summary: &Summary, resource: &ResourceName) -> Usage {
    let allocatable = summary.allocatable.get(resource);
    let used = summary.allocated.get(resource);
    Usage {
        used,
        free: allocatable.saturating_sub(used).max(0),
        percent: (allocatable > 0).then(|| {
            i64::try_from(i128::from(used) * 100 / i128::from(allocatable)).unwrap_or(i64::MAX)
        }),
    }
}

/// A cluster's `status.resourceSummary`, parsed (allocatable rounded down, requests up, as
/// the scheduler counts them).
struct Summary {
    allocatable: Resources,
    allocated: Resources,
}

fn summary_of(cluster: &Value) -> Option<Summary> {
    let summary = cluster.pointer("/status/resourceSummary")?;
    let list = |key: &str, round: Round| -> Resources {
        let parsed: BTreeMap<String, Quantity> = summary
            .get(key)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        Resources::from_list(&parsed, round)
    };
    let allocatable = list("allocatable", Round::Down);
    if allocatable.is_empty() {
        return None;
    }
    Some(Summary {
        allocatable,
        allocated: list("allocated", Round::Up),
    })
}

fn cpu(millis: i64) -> String {
    format!("{millis}m")
}

fn mem(bytes: i64) -> String {
    format!("{}Mi", bytes / (1024 * 1024))
}

fn percent(p: Option<i64>) -> String {
    p.map_or_else(|| UNKNOWN.to_string(), |p| format!("{p}%"))
}

/// The row of one Cluster object.
fn row(cluster: &Value) -> Vec<String> {
    let name = cluster["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let Some(summary) = summary_of(cluster) else {
        let mut row = vec![name];
        row.extend(std::iter::repeat_n(UNKNOWN.to_string(), HEADERS.len() - 1));
        return row;
    };
    let c = usage(&summary, &ResourceName::Cpu);
    let m = usage(&summary, &ResourceName::Memory);
    let p = usage(&summary, &ResourceName::Pods);
    vec![
        name,
        cpu(c.used),
        percent(c.percent),
        cpu(c.free),
        mem(m.used),
        percent(m.percent),
        mem(m.free),
        p.used.to_string(),
        percent(p.percent),
        p.free.to_string(),
    ]
}

/// Rows aligned in columns three spaces apart, as kubectl prints them.
fn render(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(String::len)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i + 1 == r.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}   ", width = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Runs `top`; `host` connects to the host, awaited once the command line has been checked.
pub(crate) async fn top(
    host: impl Future<Output = anyhow::Result<kube::Client>>,
    command: TopCommand,
) -> anyhow::Result<()> {
    let TopCommand::Clusters(args) = command;
    for name in &args.names {
        flotilla_membership::validate_cluster_name(name)?;
    }
    let host = host.await?;
    let api = crate::kinds::clusters(&host);
    let mut params = ListParams::default();
    if let Some(selector) = &args.selector {
        params = params.labels(selector);
    }
    let list = api.list(&params).await.map_err(|e| match e {
        kube::Error::Api(s) if s.code == 400 => anyhow!("invalid selector: {}", s.message),
        other => anyhow!(other).context("listing the Clusters"),
    })?;
    let mut clusters: Vec<Value> = list
        .items
        .into_iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()
        .context("reading the Clusters")?;
    if !args.names.is_empty() {
        let missing: Vec<&String> = args
            .names
            .iter()
            .filter(|n| !clusters.iter().any(|c| c["metadata"]["name"] == n.as_str()))
            .collect();
        if let Some(first) = missing.first() {
            let which = if args.selector.is_some() {
                " (or not selected by -l)"
            } else {
                ""
            };
            bail!("cluster {first} not found{which}");
        }
        clusters.retain(|c| {
            args.names
                .iter()
                .any(|n| c["metadata"]["name"] == n.as_str())
        });
    }
    if clusters.is_empty() {
        eprintln!("No resources found");
        return Ok(());
    }
    clusters.sort_by(|a, b| {
        a["metadata"]["name"]
            .as_str()
            .cmp(&b["metadata"]["name"].as_str())
    });
    let mut rows: Vec<Vec<String>> = Vec::new();
    if !args.no_headers {
        rows.push(HEADERS.iter().map(|h| (*h).to_string()).collect());
    }
    rows.extend(clusters.iter().map(row));
    print!("{}", render(&rows));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_row_shows_what_bound_pods_use_free_and_percent_of_allocatable() {
        let cluster = json!({
            "metadata": {"name": "member1"},
            "status": {"resourceSummary": {
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "allocated": {"cpu": "1500m", "memory": "1Gi", "pods": "3"},
                // Pending pods (40 of them, asking 12 cores) use nothing yet.
                "allocating": {"cpu": "12", "pods": "40"},
            }},
        });
        assert_eq!(
            row(&cluster),
            [
                "member1", "1500m", "37%", "2500m", "1024Mi", "12%", "7168Mi", "3", "2%", "107"
            ]
        );
    }

    #[test]
    fn overcommitted_and_unknown_clusters() {
        let over = json!({"metadata": {"name": "m"}, "status": {"resourceSummary": {
            "allocatable": {"cpu": "1"}, "allocated": {"cpu": "1500m"}}}});
        let r = row(&over);
        assert_eq!(&r[1..4], ["1500m", "150%", "0m"]);
        assert_eq!(&r[4..7], ["0Mi", UNKNOWN, "0Mi"]);
        let fresh = json!({"metadata": {"name": "new"}});
        assert_eq!(row(&fresh)[0], "new");
        assert!(row(&fresh)[1..].iter().all(|c| c == UNKNOWN));
    }

    #[test]
    fn columns_line_up() {
        let text = render(&[
            vec!["NAME".into(), "CPU(cores)".into()],
            vec!["member10".into(), "1m".into()],
        ]);
        assert_eq!(text, "NAME       CPU(cores)\nmember10   1m\n");
    }
}
