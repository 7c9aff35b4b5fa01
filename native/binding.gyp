{
  "variables": {
    "trickle_bpf%": "0"
  },
  "targets": [
    {
      "target_name": "trickle_native",
      "sources": ["addon/addon.cc", "addon/tcp_info.cc", "addon/bpf_clamp.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "bpf", "out/bpf"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-Wall", "-Wextra"],
      "cflags_cc!": ["-fno-exceptions"],
      "conditions": [
        ["trickle_bpf==1", {
          "defines": ["TRICKLE_HAVE_BPF=1"],
          "libraries": ["-lbpf", "-lelf", "-lz"]
        }]
      ]
    }
  ]
}
