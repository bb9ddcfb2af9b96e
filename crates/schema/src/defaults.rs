//! Checking a schema's `default`s once it is parsed: each must survive pruning unchanged and
//! be valid against its own node with the defaults nested inside it applied, as kube's
//! apiextensions validation requires. It runs the object pipeline ([`crate::mutate`],
//! [`crate::validate`]) on the schema's own values, so it stands above the parser.

use crate::mutate;
use crate::schema::{Additional, Level, Node, Parser, obj_path};
use crate::validate;
use crate::value::{invalid, prop_path, render};

impl Parser {
    /// Defaults must be pruned already and valid against their own schema (with the defaults
    /// nested inside them applied, as they would be when defaulting an object).
    pub(crate) fn check_defaults(&mut self, node: &Node, path: &str, level: Level) {
        if let Some(d) = &node.default {
            let default_path = obj_path(path, "default");
            let mut copy = d.clone();
            let root = level == Level::Root;
            let mut removed = Vec::new();
            mutate::prune_node(node, &mut copy, "", root, &mut removed);
            if removed.is_empty() {
                mutate::default_node(node, &mut copy, root);
                validate::validate_node(node, &copy, &default_path, root, &mut self.errors);
            } else {
                self.push(invalid(
                    &default_path,
                    &render(d),
                    "must not have unknown fields",
                ));
            }
        }
        for (name, p) in &node.properties {
            // Root metadata defaults are rejected by `root_rules`.
            if level == Level::Root && name == "metadata" {
                continue;
            }
            self.check_defaults(p, &prop_path(path, name), Level::Field);
        }
        if let Additional::Schema(a) = &node.additional {
            self.check_defaults(a, &obj_path(path, "additionalProperties"), Level::Field);
        }
        if let Some(items) = &node.items {
            self.check_defaults(items, &obj_path(path, "items"), Level::Item);
        }
    }
}
