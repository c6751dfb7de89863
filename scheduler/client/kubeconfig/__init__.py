"""Kubeconfig files and the in-cluster service account, read the way client-go's clientcmd does.

``load_kubeconfig(paths)`` merges a ``$KUBECONFIG``-style list of files (for clusters, users and
contexts the first file that defines a name wins, even for fields the later file adds; the
current-context comes from the first file that sets one), resolves relative file references
against the file that holds them, and picks the current context's cluster and user.
``in_cluster_config()`` reads the pod's service account. Both return a ``ClientConfig``: the
server, its TLS settings (``ssl_context()``), a proxy and the ``credentials`` that give each
request its Authorization header:

- ``token``: a fixed bearer token; ``tokenFile`` (and the service account token): re-read every
  minute or so (client-go's cached file token source), and at once after a 401;
- ``username``/``password``: basic auth;
- ``exec``: a credential plugin (``client.authentication.k8s.io/v1`` or ``v1beta1``), run again
  once its token's ``expirationTimestamp`` passes or after a 401. The scheduler never runs a
  plugin interactively: ``interactiveMode: Always`` is refused, ``IfAvailable`` runs it without a
  terminal. A client certificate the plugin returns is used for TLS;
- client certificates (files or data) for TLS;
- ``auth-provider`` is refused: client-go dropped its in-tree providers for exec plugins.

Key material never goes to a named file: CA data is handed to OpenSSL in memory; a client
certificate and key given as data (or by an exec plugin) are written to an anonymous memory file
(``memfd_create``) that OpenSSL opens through ``/proc/self/fd``, since it reads keys only from
files; ``load_pem_pair`` does that for the extenders' keys too.

Every problem is a ``KubeconfigError`` naming the file, the entry and the field.

The modules, one concern each: ``errors``; ``credentials`` (tokens, token files, basic auth) and
``execplugin``; ``tls`` (PEM material to OpenSSL); ``clientconfig`` (``ClientConfig``);
``incluster``; ``entries`` (reading and merging the files) and ``loading`` (``load_kubeconfig``).
"""
