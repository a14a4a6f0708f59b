# Shared by the scripts that compare latlab with closed-loop peers (load-curves.sh,
# peer-pairs.sh): the servers as `latlab_net::serve` starts them. Source it; it defines
#   SERVER_PID        the running server's pid (empty: none)
#   wait_port PORT    waits up to 5 s for something to listen on 127.0.0.1:PORT
#   start_memcached CPU PORT        memcached -t 1 -m 256 -U 0 pinned to CPU
#   start_nginx CPU PORT DIR        nginx, one worker, keep-alive, the 704-byte page, in DIR
#   stop_server       stops it (also on exit: the sourcing script's EXIT trap)
SERVER_PID=
stop_server() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    SERVER_PID=
}
trap stop_server EXIT
wait_port() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "error: nothing listens on 127.0.0.1:$1" >&2
    exit 1
}
start_memcached() {
    local as_root=()
    [ "$(id -u)" = 0 ] && as_root=(-u root)
    taskset -c "$1" memcached "${as_root[@]}" -l 127.0.0.1 -p "$2" -U 0 -t 1 -m 256 >/dev/null 2>&1 &
    SERVER_PID=$!
    wait_port "$2"
}
start_nginx() {
    local cpu=$1 port=$2 d=$3 user=
    mkdir -p "$d/www"
    for _ in $(seq 16); do echo "<html><body>latlab where-time</body></html>"; done >"$d/www/index.html"
    [ "$(id -u)" = 0 ] && user="user root;"
    cat >"$d/nginx.conf" <<CONF
$user
worker_processes 1;
daemon off;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $d; proxy_temp_path $d; fastcgi_temp_path $d;
  uwsgi_temp_path $d; scgi_temp_path $d;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$port; location / { root $d/www; } }
}
CONF
    taskset -c "$cpu" nginx -c "$d/nginx.conf" -p "$d" >/dev/null 2>&1 &
    SERVER_PID=$!
    wait_port "$port"
}
