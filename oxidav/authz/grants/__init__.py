"""The grant engine: who may do what on which resource. Grants, roles, groups, lookups,
the grant cache generation, and how shares appear in a recipient's tree."""
