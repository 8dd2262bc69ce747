"""The ACL audit on Apache Spark (``kafka-shim audit TRACE --acls A [--what-if B] --out DIR``): each request's
checks from authorizer.api_checks decided under ACL sets, what-if flips, ACL usage, least privilege, the HTML
report. Imports protocol and authorizer, never shim."""
