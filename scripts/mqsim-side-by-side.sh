#!/usr/bin/env bash
# Runs MQSim (CMU SAFARI, built from its repository: `make` in a checkout) on the device
# `nandlab bench` simulates — 32 GiB, 8 channels × 4 dies × 2 planes × 512 blocks × 256
# pages of 4 KiB, 12.5 % over-provisioning, the whole map in RAM (Ideal_Mapping_Table), no
# data cache — at queue depth 32 with 4 KiB uniformly random requests over the whole
# logical space from 90 % initial occupancy (MQSim's steady-state preconditioning), and
# prints its requests, NAND operations and write amplification per CPU-second of the
# measured phase: the difference between a run of N1 and of N2 requests, so that the
# set-up and preconditioning (about a minute of CPU) cancel out.
#
#   scripts/mqsim-side-by-side.sh MQSIM_DIR [READ_PCT] [N1] [N2]
#
# The nandlab side: `nandlab bench --match-load --small-mib 0 --flares-mib 0` (the same
# device, 90 % of the logical space preconditioned to steady state). docs/performance.md
# keeps the figures measured with both, with their date and machine.
set -euo pipefail
dir=$(realpath "${1:?usage: mqsim-side-by-side.sh MQSIM_DIR [READ_PCT] [N1] [N2]}")
read_pct=${2:-0}
n1=${3:-100000}
n2=${4:-400000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

sed -e 's|<Enabled_Preconditioning>[^<]*<|<Enabled_Preconditioning>true<|' \
    -e 's|<Caching_Mechanism>[^<]*<|<Caching_Mechanism>SIMPLE<|' \
    -e 's|<Ideal_Mapping_Table>[^<]*<|<Ideal_Mapping_Table>true<|' \
    -e 's|<Overprovisioning_Ratio>[^<]*<|<Overprovisioning_Ratio>0.125<|' \
    -e 's|<Flash_Channel_Count>[^<]*<|<Flash_Channel_Count>8<|' \
    -e 's|<Chip_No_Per_Channel>[^<]*<|<Chip_No_Per_Channel>4<|' \
    -e 's|<Die_No_Per_Chip>[^<]*<|<Die_No_Per_Chip>1<|' \
    -e 's|<Plane_No_Per_Die>[^<]*<|<Plane_No_Per_Die>2<|' \
    -e 's|<Block_No_Per_Plane>[^<]*<|<Block_No_Per_Plane>512<|' \
    -e 's|<Page_No_Per_Block>[^<]*<|<Page_No_Per_Block>256<|' \
    -e 's|<Page_Capacity>[^<]*<|<Page_Capacity>4096<|' \
    "$dir/ssdconfig.xml" > ssd.xml

workload() {
  cat <<EOF
<?xml version="1.0" encoding="us-ascii"?>
<MQSim_IO_Scenarios>
	<IO_Scenario>
		<IO_Flow_Parameter_Set_Synthetic>
			<Priority_Class>HIGH</Priority_Class>
			<Device_Level_Data_Caching_Mode>TURNED_OFF</Device_Level_Data_Caching_Mode>
			<Channel_IDs>0,1,2,3,4,5,6,7</Channel_IDs>
			<Chip_IDs>0,1,2,3</Chip_IDs>
			<Die_IDs>0</Die_IDs>
			<Plane_IDs>0,1</Plane_IDs>
			<Initial_Occupancy_Percentage>90</Initial_Occupancy_Percentage>
			<Working_Set_Percentage>100</Working_Set_Percentage>
			<Synthetic_Generator_Type>QUEUE_DEPTH</Synthetic_Generator_Type>
			<Read_Percentage>$read_pct</Read_Percentage>
			<Address_Distribution>RANDOM_UNIFORM</Address_Distribution>
			<Percentage_of_Hot_Region>0</Percentage_of_Hot_Region>
			<Generated_Aligned_Addresses>true</Generated_Aligned_Addresses>
			<Address_Alignment_Unit>8</Address_Alignment_Unit>
			<Request_Size_Distribution>FIXED</Request_Size_Distribution>
			<Average_Request_Size>8</Average_Request_Size>
			<Variance_Request_Size>0</Variance_Request_Size>
			<Seed>798</Seed>
			<Average_No_of_Reqs_in_Queue>32</Average_No_of_Reqs_in_Queue>
			<Intensity>32768</Intensity>
			<Stop_Time>0</Stop_Time>
			<Total_Requests_To_Generate>$1</Total_Requests_To_Generate>
		</IO_Flow_Parameter_Set_Synthetic>
	</IO_Scenario>
</MQSim_IO_Scenarios>
EOF
}

# CPU seconds (user + system) and NAND operations (reads, programs, erases) of one run.
run() {
  workload "$1" > "wl$1.xml"
  /usr/bin/time -f "%U %S %M" -o "time$1" "$dir/MQSim" -i ssd.xml -w "wl$1.xml" > "log$1" 2>&1
  local f="wl${1}_scenario_1.xml" r p e
  r=$(grep -o 'Issued_Flash_Read_CMD="[0-9]*"' "$f" | grep -o '[0-9]*')
  p=$(grep -o 'Issued_Flash_Program_CMD="[0-9]*"' "$f" | grep -o '[0-9]*')
  e=$(grep -o 'Issued_Flash_Erase_CMD="[0-9]*"' "$f" | grep -o '[0-9]*')
  read -r u s m < "time$1"
  echo "$u $s $m $r $p $e"
}

read -r u1 s1 m1 r1 p1 e1 < <(run "$n1")
read -r u2 s2 m2 r2 p2 e2 < <(run "$n2")
awk -v u1="$u1" -v s1="$s1" -v u2="$u2" -v s2="$s2" -v r1="$r1" -v r2="$r2" \
    -v p1="$p1" -v p2="$p2" -v e1="$e1" -v e2="$e2" -v n1="$n1" -v n2="$n2" -v m="$m2" \
    -v rp="$read_pct" 'BEGIN {
  cpu = (u2 + s2) - (u1 + s1); req = n2 - n1
  ops = (r2 + p2 + e2) - (r1 + p1 + e1)
  writes = req * (100 - rp) / 100
  printf "MQSim, %d %% reads: %d requests in %.2f CPU s (runs of %d and %d requests)\n", rp, req, cpu, n1, n2
  printf "  %.0f requests per CPU-second, %.0f NAND operations per CPU-second\n", req / cpu, ops / cpu
  printf "  %.2f NAND operations per request, WAF %.2f, peak RSS %.0f MiB\n", ops / req, (p2 - p1) / writes, m / 1024
}'
