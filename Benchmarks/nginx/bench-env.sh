# Shared by Benchmarks/run-transfers.sh and Benchmarks/run-instructions.sh (sourced, not run):
# installs what the loopback benchmarks need and starts the nginx they measure against.
#
# Sourcing it (with `here` = Benchmarks/ and a `log` function defined) installs nginx, pkg-config,
# libcurl's and libuv's headers and a C compiler when missing, and sets NGINX and CC.
# `start_nginx PREFIX` then starts nginx from Benchmarks/nginx/nginx.conf.template, serving
# PREFIX/www on a free loopback port, and sets `port` and `nginx_pid` (the caller stops it); it exits
# when nginx can't be started. With `nginx_extra_servers` set (server blocks, whose @PREFIX@ and
# @PORT+1@ … @PORT+9@ are filled in with the prefix and the ports after `port`), the config has them too: nginx
# then listens on those ports as well, and a candidate port is given up when any of them is taken.
# `make_throwaway_tls DIR` makes DIR/ca.pem, an authority, and DIR/server.pem and DIR/server.key, its
# certificate for 127.0.0.1 and localhost (ECDSA P-256, two days); `h2_listen_options` sets `h2_listen` and
# `h2_directive`, the way this nginx is told to offer HTTP/2 on a TLS server.

if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
apt_install() {
    log "installing: $*"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >&2
}

find_nginx() { command -v nginx 2>/dev/null || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true; }
NGINX=${NGINX:-$(find_nginx)}
if [ -z "$NGINX" ]; then
    had_system_nginx=0
    [ -e /run/nginx.pid ] && had_system_nginx=1
    apt_install nginx-light || apt_install nginx
    NGINX=$(find_nginx)
    [ -n "$NGINX" ] || { log "nginx still missing after installing nginx-light"; exit 1; }
    # The package's postinst may start the system-wide nginx (port 80); we didn't want that one.
    if [ "$had_system_nginx" = 0 ] && [ -e /run/nginx.pid ]; then
        log "stopping the system nginx that the package installation started"
        $SUDO "$NGINX" -s stop 2>/dev/null || true
    fi
fi

command -v pkg-config >/dev/null || apt_install pkg-config
missing=()
pkg-config --exists libcurl || missing+=(libcurl4-openssl-dev)
pkg-config --exists libuv || missing+=(libuv1-dev)
pkg-config --exists libidn2 || missing+=(libidn2-dev)
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"

CC=${CC:-$(command -v cc || command -v clang || command -v gcc || true)}
if [ -z "$CC" ]; then
    apt_install gcc libc6-dev
    CC=$(command -v gcc)
fi


start_nginx() { # prefix
    local prefix=$1
    mkdir -p "$prefix/www" "$prefix/temp"
    user_directive=""
    [ "$(id -u)" != 0 ] || user_directive="user $(id -un) $(id -gn);"
    nginx_build=$("$NGINX" -V 2>&1)
    temp_paths="    client_body_temp_path $prefix/temp/client_body;"
    for module in proxy fastcgi uwsgi scgi; do
        if [[ "$nginx_build" != *"--without-http_${module}_module"* ]]; then
            temp_paths+=$'\n'"    ${module}_temp_path $prefix/temp/$module;"
        fi
    done

    port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

    port=""
    for attempt in $(seq 10); do
        # Below Linux's ephemeral range (32768 and up by default), where a client's connection may hold the
        # port, or one of the extra servers' ports after it.
        candidate=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
        port_in_use "$candidate" && continue
        local extra="${nginx_extra_servers:-}" k
        for k in 1 2 3 4 5 6 7 8 9; do extra=${extra//@PORT+$k@/$((candidate + k))}; done
        extra=${extra//@PREFIX@/$prefix}
        sed -e "s|@PREFIX@|$prefix|g" -e "s|@PORT@|$candidate|g" -e "s|@USER_DIRECTIVE@|$user_directive|" \
            "$here/nginx/nginx.conf.template" |
            awk -v temp="$temp_paths" -v extra="$extra" '
                $0 == "@TEMP_PATHS@" { print temp; next }
                $0 ~ /^ *@EXTRA_SERVERS@$/ { if (extra != "") print extra; next }
                { print }' >"$prefix/nginx.conf"
        : >"$prefix/error.log"
        "$NGINX" -p "$prefix" -e "$prefix/error.log" -c "$prefix/nginx.conf" >"$prefix/stdout.log" 2>&1 &
        nginx_pid=$!
        for _ in $(seq 100); do
            port_in_use "$candidate" && { port=$candidate; break; }
            kill -0 "$nginx_pid" 2>/dev/null || break
            sleep 0.05
        done
        [ -n "$port" ] && break
        log "nginx did not come up on port $candidate (attempt $attempt):"
        cat "$prefix/error.log" "$prefix/stdout.log" >&2 || true
        kill "$nginx_pid" 2>/dev/null || true
        wait "$nginx_pid" 2>/dev/null || true
        nginx_pid=""
    done
    [ -n "$port" ] || { log "could not start nginx"; exit 1; }
}

make_throwaway_tls() { # dir
    local tls=$1
    command -v openssl >/dev/null || apt_install openssl
    mkdir -p "$tls"
    log "making a throwaway certificate authority and a certificate for 127.0.0.1 (ECDSA P-256)"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tls/ca.key" -out "$tls/ca.pem" \
        -days 2 -subj "/CN=Herald benchmark throwaway CA" -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" 2>"$tls/openssl.log"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tls/server.key" \
        -out "$tls/server.csr" -subj "/CN=127.0.0.1" 2>>"$tls/openssl.log"
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' \
        >"$tls/server.ext"
    openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial -days 2 \
        -extfile "$tls/server.ext" -out "$tls/server.pem" 2>>"$tls/openssl.log"
    openssl verify -CAfile "$tls/ca.pem" "$tls/server.pem" >/dev/null ||
        { log "the throwaway certificate does not verify:"; cat "$tls/openssl.log" >&2; exit 1; }
}

h2_listen_options() {
    # nginx 1.25.1 and later take `http2 on;`; earlier ones (Debian 12's 1.22) the `http2` parameter of listen.
    local version
    version=$("$NGINX" -v 2>&1 | sed -n 's|.*nginx/\([0-9.]*\).*|\1|p')
    if printf '%s\n%s\n' 1.25.1 "$version" | sort -V -C; then h2_listen="" h2_directive="http2 on;"
    else h2_listen=" http2" h2_directive=""; fi
}
